//! The msgpack-rpc rules on single messages: what is a request, what is answerable, what is
//! fatal.

mod common;

use bytes::BytesMut;
use rpcmux_msgpack_rpc::{
    decode_message, encode_request, encode_response, value_to_error, write_value, CodecError,
    Limits, Message, MsgpackRpcCodec,
};
use rpcmux_value::{vstruct, RpcError, Value};
use tokio_util::codec::{Decoder, Encoder};

/// Encode an arbitrary array of values as a would-be message.
fn raw(items: Vec<Value>) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, &Value::Array(items)).unwrap();
    out
}

fn decode(bytes: &[u8]) -> Result<Message, CodecError> {
    decode_message(bytes, &Limits::default())
}

fn fatal(bytes: &[u8]) -> String {
    match decode(bytes) {
        Err(e) => e.to_string(),
        Ok(m) => panic!("expected a fatal error, got {m:?}"),
    }
}

#[test]
fn msgid_must_be_u32() {
    let req = |id: Value| raw(vec![0.into(), id, "ping".into(), Value::Array(vec![])]);
    assert!(matches!(
        decode(&req(Value::Int(u32::MAX as i64))),
        Ok(Message::Request {
            msgid: u32::MAX,
            ..
        })
    ));
    assert!(matches!(
        decode(&req(Value::Int(0))),
        Ok(Message::Request { msgid: 0, .. })
    ));
    for (id, shown) in [
        (Value::Int(-1), "int -1"),
        (Value::Int(u32::MAX as i64 + 1), "int 4294967296"),
        (Value::Double(1.0), "double 1"),
        (Value::from("7"), "string \"7\""),
        (Value::Nil, "nil"),
    ] {
        let err = fatal(&req(id));
        assert!(
            err.contains("msgid must be an unsigned 32-bit int"),
            "{err}"
        );
        assert!(err.contains(shown), "{err}");
    }
    // A u64 above i64::MAX too (it reads as a double).
    let mut b = vec![
        0x94, 0x00, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    ];
    b.extend_from_slice(&[0xa1, b'm', 0x90]);
    assert!(fatal(&b).contains("msgid"));
}

#[test]
fn method_may_be_str_or_bin() {
    let bin = [0x93, 0x02, 0xc4, 0x04, b'p', b'i', b'n', b'g', 0x90];
    assert_eq!(
        decode(&bin).unwrap(),
        Message::Notification {
            method: "ping".into(),
            params: vec![]
        }
    );
    let bin_req = [0x94, 0x00, 0x05, 0xc4, 0x01, b'x', 0x91, 0x01];
    assert_eq!(
        decode(&bin_req).unwrap(),
        Message::Request {
            msgid: 5,
            method: "x".into(),
            params: vec![Value::Int(1)]
        }
    );
}

fn invalid(bytes: &[u8]) -> (Option<u32>, RpcError) {
    match decode(bytes) {
        Ok(Message::Invalid { msgid, error }) => (msgid, error),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn bad_requests_are_answerable() {
    let (id, e) = invalid(&raw(vec![
        0.into(),
        3.into(),
        42.into(),
        Value::Array(vec![]),
    ]));
    assert_eq!((id, e.code), (Some(3), RpcError::INVALID_REQUEST));
    assert!(
        e.message
            .contains("method name must be a str or bin, got int 42"),
        "{e}"
    );

    let (id, e) = invalid(&raw(vec![
        0.into(),
        4.into(),
        "echo".into(),
        vstruct! {"a" => 1},
    ]));
    assert_eq!((id, e.code), (Some(4), RpcError::INVALID_REQUEST));
    assert!(
        e.message
            .contains("params of echo must be an array, got struct"),
        "{e}"
    );

    let (id, e) = invalid(&raw(vec![0.into(), 5.into(), "echo".into(), "x".into()]));
    assert_eq!(id, Some(5));
    assert!(
        e.message.contains("must be an array, got string \"x\""),
        "{e}"
    );

    // An extension type we do not know, inside params.
    let b = [0x94, 0x00, 0x06, 0xa1, b'm', 0x91, 0xd4, 0x05, 0x00];
    let (id, e) = invalid(&b);
    assert_eq!((id, e.code), (Some(6), RpcError::INVALID_PARAMS));
    assert!(e.message.contains("extension type 5"), "{e}");

    // A map key that is an array.
    let b = [0x94, 0x00, 0x07, 0xa1, b'm', 0x91, 0x81, 0x90, 0x01];
    let (id, e) = invalid(&b);
    assert_eq!((id, e.code), (Some(7), RpcError::INVALID_PARAMS));

    // Method bin that is not UTF-8.
    let b = [0x94, 0x00, 0x08, 0xc4, 0x01, 0xff, 0x90];
    assert_eq!(invalid(&b).0, Some(8));
}

#[test]
fn bad_notifications_are_reported_without_msgid() {
    let (id, e) = invalid(&raw(vec![2.into(), Value::Nil, Value::Array(vec![])]));
    assert_eq!((id, e.code), (None, RpcError::INVALID_REQUEST));
    let (id, _) = invalid(&raw(vec![2.into(), "n".into(), Value::Nil]));
    assert_eq!(id, None);
}

#[test]
fn invalid_encodes_as_its_error_reply() {
    let bytes = raw(vec![0.into(), 3.into(), 42.into(), Value::Array(vec![])]);
    let msg = decode(&bytes).unwrap();
    let mut codec = MsgpackRpcCodec::default();
    let mut out = BytesMut::new();
    codec.encode(&msg, &mut out).unwrap();
    let Message::Response {
        msgid,
        error,
        result,
    } = decode(&out).unwrap()
    else {
        panic!()
    };
    assert_eq!((msgid, result), (3, Value::Nil));
    let Message::Invalid { error: want, .. } = msg else {
        panic!()
    };
    assert_eq!(value_to_error(&error), want);
    // A notification's Invalid has no reply.
    let note = decode(&raw(vec![2.into(), Value::Nil, Value::Array(vec![])])).unwrap();
    let mut out = BytesMut::new();
    codec.encode(note, &mut out).unwrap();
    assert!(out.is_empty());
}

#[test]
fn wrong_envelopes_are_fatal() {
    for (bytes, want) in [
        (
            raw(vec![3.into(), 1.into(), "m".into(), Value::Array(vec![])]),
            "type must be 0, 1 or 2, got int 3",
        ),
        (
            raw(vec!["0".into(), 1.into(), "m".into(), Value::Array(vec![])]),
            "type must be 0, 1 or 2",
        ),
        (
            raw(vec![0.into(), "m".into(), Value::Array(vec![])]),
            "type 0 must have 4 items, got 3",
        ),
        (
            raw(vec![2.into(), 1.into(), "m".into(), Value::Array(vec![])]),
            "type 2 must have 3 items, got 4",
        ),
        (
            raw(vec![1.into(), 1.into(), Value::Nil]),
            "type 1 must have 4 items, got 3",
        ),
        (raw(vec![0.into(), 1.into()]), "got 2 items"),
        (raw(vec![0.into(); 5]), "got 5 items"),
        (vec![0x81, 0xa1, b'k', 0x01], "first byte 0x81 (map)"),
        (b"{\"jsonrpc\":\"2.0\"}".to_vec(), "first byte 0x7b"),
    ] {
        let err = fatal(&bytes);
        assert!(err.contains(want), "{err} does not say {want}");
    }
}

#[test]
fn decode_message_wants_exactly_one_message() {
    let mut two = BytesMut::new();
    encode_request(&mut two, 1, "a", &[]).unwrap();
    encode_request(&mut two, 2, "b", &[]).unwrap();
    assert!(fatal(&two).contains("bytes after the end"));
    assert!(matches!(
        decode(&two[..3]),
        Err(CodecError::Truncated { .. })
    ));
}

#[test]
fn responses_round_trip_both_ways() {
    let mut out = BytesMut::new();
    encode_response(&mut out, 77, Ok(&vstruct! {"ok" => true}));
    assert_eq!(
        decode(&out).unwrap(),
        Message::Response {
            msgid: 77,
            error: Value::Nil,
            result: vstruct! {"ok" => true}
        }
    );
    // Message::encode writes a Response's fields as they are.
    let msg = Message::Response {
        msgid: 1,
        error: "plain text".into(),
        result: Value::Nil,
    };
    let mut out = BytesMut::new();
    msg.encode(&mut out).unwrap();
    assert_eq!(decode(&out).unwrap(), msg);
}

#[test]
fn error_with_data_travels_as_three_items() {
    let e = RpcError::new(12, "no such VM").with_data(vstruct! {"vmID" => "abc"});
    let mut out = BytesMut::new();
    encode_response(&mut out, 2, Err(&e));
    let Message::Response { error, .. } = decode(&out).unwrap() else {
        panic!()
    };
    assert_eq!(error.as_array().map(<[Value]>::len), Some(3));
    assert_eq!(value_to_error(&error), e);
}

#[test]
fn codec_errors_map_to_rpc_errors() {
    let too_large = CodecError::TooLarge {
        limit: 10,
        size: 11,
    };
    assert_eq!(too_large.to_rpc_error().code, RpcError::INVALID_REQUEST);
    assert!(too_large
        .to_string()
        .contains("at least 11 bytes, the limit is 10"));
    let bad = CodecError::Malformed("x".into());
    assert_eq!(bad.to_rpc_error().code, RpcError::PARSE_ERROR);
    let io: CodecError = std::io::Error::other("boom").into();
    assert!(io.to_string().contains("boom"));
}

#[test]
fn decoder_yields_each_message_once_and_keeps_the_rest() {
    let mut buf = BytesMut::new();
    encode_request(&mut buf, 1, "a", &[Value::Int(1)]).unwrap();
    encode_request(&mut buf, 2, "b", &[]).unwrap();
    buf.extend_from_slice(&[0x94, 0x00]); // start of a third
    let mut codec = MsgpackRpcCodec::default();
    assert!(matches!(
        codec.decode(&mut buf).unwrap(),
        Some(Message::Request { msgid: 1, .. })
    ));
    assert!(matches!(
        codec.decode(&mut buf).unwrap(),
        Some(Message::Request { msgid: 2, .. })
    ));
    assert_eq!(codec.decode(&mut buf).unwrap(), None);
    assert_eq!(&buf[..], &[0x94, 0x00]);
    assert!(matches!(
        codec.decode_eof(&mut buf),
        Err(CodecError::Truncated { buffered: 2 })
    ));
}
