//! MessagePack-RPC over TCP and HTTP: real Python clients, a 10 000-deep pipeline,
//! out-of-order replies, malformed and oversized messages.

use crate::common::*;
use rpcmux_msgpack_rpc::{encode_request, Message, MsgpackRpcCodec};
use rpcmux_value::Value;
use std::io::{Read, Write};
use tokio_util::codec::Decoder;

#[test]
fn msgpack_rpc_python_client() {
    let srv = Server::start(&[]);
    let py = python("RPCMUX_PY_MSGPACKRPC", "msgpackrpc");
    let out = run_py_with(
        &py,
        "msgpackrpc_python_client.py",
        &["127.0.0.1", &srv.port()],
    );
    assert!(out.contains("ok msgpack-rpc-python"), "{out}");
}

#[test]
fn aio_msgpack_rpc_and_pynvim_clients() {
    let srv = Server::start(&[]);
    let out = run_py("msgpack_clients.py", &["127.0.0.1", &srv.port()]);
    assert!(
        out.contains("ok aio-msgpack-rpc") && out.contains("ok pynvim"),
        "{out}"
    );
}

/// Read messages until `n` replies arrived.
fn read_replies(s: &mut std::net::TcpStream, n: usize) -> Vec<(u32, Value, Value)> {
    let mut codec = MsgpackRpcCodec::default();
    let mut buf = bytes::BytesMut::new();
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while got.len() < n {
        while let Some(m) = codec
            .decode(&mut buf)
            .expect("server speaks valid msgpack-rpc")
        {
            match m {
                Message::Response {
                    msgid,
                    error,
                    result,
                } => got.push((msgid, error, result)),
                other => panic!("unexpected {other:?}"),
            }
        }
        if got.len() >= n {
            break;
        }
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "server closed after {} replies", got.len());
        buf.extend_from_slice(&chunk[..k]);
    }
    got
}

#[test]
fn pipelines_ten_thousand_requests_and_a_slow_call_is_overtaken() {
    let srv = Server::start(&[]);
    let mut s = connect(srv.addr);
    let mut wire = bytes::BytesMut::new();
    encode_request(&mut wire, 0, "sleep", &[Value::Int(500)]).unwrap();
    for id in 1..=10_000u32 {
        encode_request(&mut wire, id, "echo", &[Value::Int(id as i64 * 3)]).unwrap();
    }
    // write everything without reading (a writer thread, since replies flow meanwhile)
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&wire).unwrap());
    let replies = read_replies(&mut s, 10_001);
    writer.join().unwrap();
    assert_eq!(
        replies.last().unwrap().0,
        0,
        "the slow call is answered last"
    );
    let mut seen = vec![false; 10_001];
    for (id, err, result) in &replies {
        assert_eq!(*err, Value::Nil, "msgid {id}");
        let want = if *id == 0 { 500 } else { *id as i64 * 3 };
        assert_eq!(*result, Value::Int(want), "msgid {id}");
        assert!(
            !std::mem::replace(&mut seen[*id as usize], true),
            "duplicate reply {id}"
        );
    }
}

#[test]
fn malformed_and_oversized_messages_close_that_connection_only() {
    let srv = Server::start(&["--max-frame", "65536"]);
    // answerable: params not an array → error reply, connection goes on
    let mut s = connect(srv.addr);
    s.write_all(&[0x94, 0x00, 0x05, 0xa4, b'e', b'c', b'h', b'o', 0x07])
        .unwrap();
    let mut wire = bytes::BytesMut::new();
    encode_request(&mut wire, 6, "ping", &[]).unwrap();
    s.write_all(&wire).unwrap();
    let r = read_replies(&mut s, 2);
    assert_eq!(r[0].0, 5);
    assert_eq!(r[0].1.as_array().unwrap()[0], Value::Int(-32600));
    assert_eq!((r[1].0, &r[1].2), (6, &Value::Bool(true)));

    // framing garbage after a good request: the reply owed is written, then close
    let mut s = connect(srv.addr);
    let mut wire = bytes::BytesMut::new();
    encode_request(&mut wire, 1, "ping", &[]).unwrap();
    wire.extend_from_slice(&[0xc1, 0xc1, 0xc1]);
    s.write_all(&wire).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let mut codec = MsgpackRpcCodec::default();
    let mut buf = bytes::BytesMut::from(&all[..]);
    assert!(matches!(
        codec.decode(&mut buf).unwrap(),
        Some(Message::Response { msgid: 1, .. })
    ));
    // Then the reason, as an error reply under msgid 0 (the message's own is unknown).
    assert!(matches!(
        codec.decode(&mut buf).unwrap(),
        Some(Message::Response {
            msgid: 0,
            error: Value::Array(_),
            ..
        })
    ));
    assert!(srv.wait_log(
        "msgpack-rpc framing error",
        std::time::Duration::from_secs(2)
    ));

    // a message declaring 1 MB against a 64 KiB cap: refused as soon as declared
    let mut big = vec![0x94, 0x00, 0x01, 0xa4, b'e', b'c', b'h', b'o', 0x91, 0xdb];
    big.extend_from_slice(&(1u32 << 20).to_be_bytes());
    let (code, _) = last_words(srv.addr, &big);
    assert_eq!(code, Value::Int(-32600));

    // nested deeper than the parser's cap: an error reply naming it, then close
    let mut deep = vec![0x94, 0x00, 0x02, 0xa4, b'e', b'c', b'h', b'o'];
    deep.extend(std::iter::repeat_n(0x91, 200));
    deep.push(0xc0);
    let (code, message) = last_words(srv.addr, &deep);
    assert_eq!(code, Value::Int(-32700));
    assert!(message.contains("deep"), "{message}");

    // others are unaffected
    let mut s = connect(srv.addr);
    let mut wire = bytes::BytesMut::new();
    encode_request(&mut wire, 9, "echo", &[Value::from("still here")]).unwrap();
    s.write_all(&wire).unwrap();
    assert_eq!(read_replies(&mut s, 1)[0].2, Value::from("still here"));
}

/// Send `wire` (a message the server cannot frame) on a fresh connection: the error
/// reply it gets under msgid 0 before the close, as (code, message).
fn last_words(addr: std::net::SocketAddr, wire: &[u8]) -> (Value, String) {
    let mut s = connect(addr);
    s.write_all(wire).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    let mut buf = bytes::BytesMut::from(&rest[..]);
    match MsgpackRpcCodec::default().decode(&mut buf).unwrap() {
        Some(Message::Response {
            msgid: 0, error, ..
        }) => {
            let e = error.as_array().unwrap();
            (e[0].clone(), e[1].as_str().unwrap_or_default().to_owned())
        }
        other => panic!("expected an error reply, got {other:?}"),
    }
}

#[test]
fn msgpack_over_http() {
    let srv = Server::start(&[]);
    let mut wire = bytes::BytesMut::new();
    encode_request(&mut wire, 42, "echo", &[Value::Bytes(vec![0, 1, 2])]).unwrap();
    for ctype in ["application/msgpack", "application/x-msgpack"] {
        let (st, head, body) = http_post(srv.addr, Some(ctype), &wire);
        assert_eq!(st, 200);
        assert!(head
            .to_ascii_lowercase()
            .contains("content-type: application/msgpack"));
        let m = rpcmux_msgpack_rpc::decode_message(&body, &Default::default()).unwrap();
        assert_eq!(
            m,
            Message::Response {
                msgid: 42,
                error: Value::Nil,
                result: Value::Bytes(vec![0, 1, 2])
            }
        );
    }
    let (st, _, body) = http_post(srv.addr, Some("application/msgpack"), b"\xc1garbage");
    assert_eq!(st, 200);
    let Message::Response { error, .. } =
        rpcmux_msgpack_rpc::decode_message(&body, &Default::default()).unwrap()
    else {
        panic!()
    };
    assert_eq!(error.as_array().unwrap()[0], Value::Int(-32700));
}
