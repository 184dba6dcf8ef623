//! Parsing a request up to its params, and leaving the params encoded: a server whose
//! verb takes a Rust type decodes them straight into it (with [`typed`](crate::typed)), with no
//! [`Value`] tree; other verbs read them with [`read_params`].

use crate::decode::Reader;
use crate::error::CodecError;
use crate::message::{describe, method_name, msgid, parse_message, Message, NOTIFICATION, REQUEST};
use rpcmux_value::{RpcError, Value};

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
        /// The method name.
        method: String,
        /// The encoded params array, to deserialize straight into a handler's type.
        params: &'a [u8],
    },
    /// Anything else, parsed whole (a response, or an invalid request to answer).
    Other(Message),
}

/// Split one message that the codec framed (see [`crate::MsgpackRpcCodec::decode_or_frame`]).
pub fn split_call(frame: &[u8]) -> Result<SplitCall<'_>, CodecError> {
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
        method,
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
            (msgid, method.as_str(), params_len(params)),
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
}
