//! Parsing a request up to its params, and leaving the params encoded: a server whose
//! verb takes a Rust type decodes them straight into it (with [`typed`](crate::typed)), with no
//! [`Value`] tree; other verbs read them with [`read_params`].

use crate::decode::Reader;
use crate::error::CodecError;
use crate::message::{describe, method_name, msgid, parse_message, Message, NOTIFICATION, REQUEST};
use rpcmux_value::{RpcError, Value};
use std::borrow::Cow;

/// Depth allowance when parsing a frame: the scanner already enforced the depth cap.
const FRAMED: usize = usize::MAX;

/// One framed message, split at its params.
#[derive(Debug)]
pub enum SplitCall<'a> {
    /// A request (`msgid` set) or notification whose params are an array, still
    /// encoded (`params` starts at the array header).
    Call {
        /// The request's msgid; `None` for a notification.
        msgid: Option<u32>,
        /// The method name (borrowed from the frame when spelled as a str).
        method: Cow<'a, str>,
        /// The encoded params array, to deserialize straight into a handler's type.
        params: &'a [u8],
    },
    /// Anything else, parsed whole (a response, or an invalid request to answer).
    Other(Message),
}

/// Split one message that the codec framed (see [`crate::MsgpackRpcCodec::decode_or_frame`]).
pub fn split_call(frame: &[u8]) -> Result<SplitCall<'_>, CodecError> {
    match split_plain(frame) {
        Some(call) => Ok(call),
        None => split_items(frame),
    }
}

/// [`split_call`] item by item: any spelling, and every error.
fn split_items(frame: &[u8]) -> Result<SplitCall<'_>, CodecError> {
    let mut r = Reader::new(frame);
    let (len, kind) = (r.array_len(), r.value(FRAMED));
    let msgid = match (len, kind) {
        (Ok(Some(4)), Ok(Value::Int(k))) if k == i64::from(REQUEST) => {
            Some(msgid(&mut r, "request")?)
        }
        (Ok(Some(3)), Ok(Value::Int(k))) if k == i64::from(NOTIFICATION) => None,
        _ => return parse_message(frame).map(SplitCall::Other),
    };
    let invalid = |error| SplitCall::Other(Message::Invalid { msgid, error });
    let method = match method_name(&mut r) {
        Ok(m) => m,
        Err(e) => return Ok(invalid(e)),
    };
    let params = &frame[r.pos()..];
    if !matches!(r.array_len(), Ok(Some(_))) {
        let got = r.value(FRAMED).map(|v| describe(&v));
        return Ok(invalid(RpcError::invalid_request(format!(
            "params of {method} must be an array, got {}",
            got.unwrap_or_else(|e| e.to_string())
        ))));
    }
    Ok(SplitCall::Call {
        msgid,
        method: Cow::Owned(method),
        params,
    })
}

/// [`split_call`] for a call spelled the common way (a uint msgid, a str method name of
/// UTF-8, an array of params), read off the bytes with the name borrowed: building a
/// value for each of the first three items, and a `String` for the name, was a tenth of
/// a small typed call's time. `None`: anything else, which [`split_call`] then reads
/// item by item and judges.
fn split_plain(frame: &[u8]) -> Option<SplitCall<'_>> {
    let byte = |at: usize| frame.get(at).copied();
    let (msgid, mut pos) = match frame.get(..2)? {
        [0x94, REQUEST] => match byte(2)? {
            b @ 0x00..=0x7f => (Some(u32::from(b)), 3),
            0xcc => (Some(u32::from(byte(3)?)), 4),
            0xcd => (
                Some(u32::from(u16::from_be_bytes(
                    frame.get(3..5)?.try_into().ok()?,
                ))),
                5,
            ),
            0xce => (
                Some(u32::from_be_bytes(frame.get(3..7)?.try_into().ok()?)),
                7,
            ),
            _ => return None,
        },
        [0x93, NOTIFICATION] => (None, 2),
        _ => return None,
    };
    let (len, head) = match byte(pos)? {
        b @ 0xa0..=0xbf => (usize::from(b & 0x1f), 1),
        0xd9 => (usize::from(byte(pos + 1)?), 2),
        _ => return None,
    };
    let method = crate::short::utf8(frame.get(pos + head..pos + head + len)?)?;
    pos += head + len;
    let params = &frame[pos..];
    if !matches!(params.first()?, 0x90..=0x9f | 0xdc | 0xdd) {
        return None;
    }
    Some(SplitCall::Call {
        msgid,
        method: Cow::Borrowed(method),
        params,
    })
}

/// Read the params that [`split_call`] left encoded, as [`Message::Request`] would
/// hold them (a param the model cannot hold is invalid-params).
pub fn read_params(method: &str, params: &[u8]) -> Result<Vec<Value>, RpcError> {
    let mut r = Reader::new(params);
    let n = match r.array_len() {
        Ok(Some(n)) => n,
        _ => return Err(RpcError::invalid_request("params must be an array")),
    };
    r.items(n, FRAMED)
        .map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))
}

/// How many params an encoded params array holds.
pub fn params_len(params: &[u8]) -> Option<usize> {
    Reader::new(params)
        .array_len()
        .ok()
        .flatten()
        .map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{encode_notification, encode_request};
    use bytes::BytesMut;

    #[test]
    fn splits_requests_and_notifications_and_reads_params_alike() {
        let mut wire = BytesMut::new();
        encode_request(&mut wire, 9, "echo", &[Value::from("hi"), Value::Int(2)]).unwrap();
        let SplitCall::Call {
            msgid,
            method,
            params,
        } = split_call(&wire).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (msgid, &*method, params_len(params)),
            (Some(9), "echo", Some(2))
        );
        assert_eq!(
            read_params(&method, params).unwrap(),
            vec![Value::from("hi"), Value::Int(2)]
        );
        let mut wire = BytesMut::new();
        encode_notification(&mut wire, "ev", &[]).unwrap();
        assert!(matches!(
            split_call(&wire).unwrap(),
            SplitCall::Call { msgid: None, .. }
        ));
        // params not an array: answered, with the msgid
        let bad = [0x94, 0x00, 0x05, 0xa1, b'f', 0x07];
        let SplitCall::Other(Message::Invalid {
            msgid: Some(5),
            error,
        }) = split_call(&bad).unwrap()
        else {
            panic!()
        };
        assert_eq!(error.code, -32600);
    }

    #[test]
    fn plainly_spelled_calls_split_as_item_by_item() {
        let mut frames: Vec<Vec<u8>> = Vec::new();
        for msgid in [0u32, 5, 127, 128, 255, 256, 65_535, 65_536, u32::MAX] {
            for method in ["m", &"x".repeat(31), &"y".repeat(32), &"z".repeat(300), "é"] {
                let mut wire = BytesMut::new();
                encode_request(&mut wire, msgid, method, &[Value::Int(1)]).unwrap();
                frames.push(wire.to_vec());
            }
        }
        let mut wire = BytesMut::new();
        encode_notification(&mut wire, "ev", &[Value::Nil]).unwrap();
        frames.push(wire.to_vec());
        // Spellings left to the item-by-item path: a bin name, a signed msgid, a
        // non-UTF-8 name, params that are no array, a short frame.
        frames.push(vec![0x94, 0x00, 0x01, 0xc4, 0x01, b'm', 0x90]);
        frames.push(vec![0x94, 0x00, 0xd0, 0x01, 0xa1, b'm', 0x90]);
        frames.push(vec![0x94, 0x00, 0x01, 0xa1, 0xff, 0x90]);
        frames.push(vec![0x94, 0x00, 0x01, 0xa1, b'm', 0x07]);
        frames.push(vec![0x94, 0x00, 0xcd, 0x01]);
        let mut plain = 0;
        for f in &frames {
            let slow = format!("{:?}", split_items(f));
            if let Some(fast) = split_plain(f) {
                plain += 1;
                assert_eq!(format!("{:?}", Ok::<_, CodecError>(fast)), slow, "{f:02x?}");
            }
            assert_eq!(format!("{:?}", split_call(f)), slow, "{f:02x?}");
        }
        assert_eq!(
            plain,
            9 * 4 + 1,
            "every str-named uint-msgid call is split plainly"
        );
    }
}
