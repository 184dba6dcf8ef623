//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test file uses a different subset

use bytes::BytesMut;
use rpcmux_msgpack_rpc::{CodecError, Limits, Message, MsgpackRpcCodec};
use rpcmux_value::{vstruct, Value};
use tokio_util::codec::Decoder;

/// The benchmark payload of /work/shared/reference/payload.py, as a Value.
pub fn music_entry() -> Value {
    Value::Array(vec![
        "MusicEntry".into(),
        vstruct! {
            "email" => "lalcorn@ultranet", "time" => "7:30pm", "tickets" => "", "program" => "",
            "state" => "MA", "start" => "2002-01-26", "venueurl" => "", "country" => "",
            "performers" => vec![Value::from("An Evening with Karen Savoca")],
            "addressid" => 7283, "name" => "", "zip" => "", "city" => "Sudbury",
            "info" => "Reservations required. Please call (978)443-3253 or e-mail Laurie at lal...@ultranet.com.",
            "merchandise" => Vec::<Value>::new(), "event" => "", "keywords" => vec![Value::from(".zyx.41")],
            "submit_time" => "2001-08-28", "key" => 325629, "active" => 1, "end" => "2002-01-26",
            "price" => "$17", "address3" => "", "address1" => "", "venue" => "Fox Run House Concerts",
            "address2" => "", "update_time" => "2001-09-22:19:28:44",
        },
    ])
}

/// What a stream decoded into: the messages, then the error that ended it, if any.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    /// Debug renderings, so NaN doubles compare equal to themselves.
    pub messages: Vec<String>,
    pub error: Option<String>,
}

/// Feed `chunks` to a fresh codec as a FramedRead would (decode after each read until it
/// needs more, decode_eof at the end), collecting what comes out.
pub fn run_chunks<'a>(limits: Limits, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut codec = MsgpackRpcCodec::new(limits);
    let mut buf = BytesMut::new();
    let mut messages = Vec::new();
    let fail = |messages, e: CodecError| Outcome {
        messages,
        error: Some(e.to_string()),
    };
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(m)) => messages.push(format!("{m:?}")),
                Ok(None) => break,
                Err(e) => return fail(messages, e),
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(m)) => messages.push(format!("{m:?}")),
            Ok(None) => break,
            Err(e) => return fail(messages, e),
        }
    }
    Outcome {
        messages,
        error: None,
    }
}

pub fn run_whole(limits: Limits, bytes: &[u8]) -> Outcome {
    run_chunks(limits, [bytes])
}

/// Decode every message of a buffer that must hold only complete, valid messages.
pub fn decode_all(bytes: &[u8]) -> Vec<Message> {
    let mut codec = MsgpackRpcCodec::default();
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    while let Some(m) = codec.decode_eof(&mut buf).unwrap() {
        out.push(m);
    }
    out
}
