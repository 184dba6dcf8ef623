//! MessagePack-RPC over a stream: `[0, msgid, method, params]` out,
//! `[1, msgid, error, result]` in (a non-nil error is an error reply, read with the
//! codec crate's [`value_to_error`], which knows rpcmux's and other servers' shapes).

use super::stream::{Decode, Encode, Incoming, Parts};
use super::{ClientError, ConnectOpts, Event, Io};
use bytes::{Bytes, BytesMut};
use rpcmux_msgpack_rpc::{encode_request, value_to_error, Limits, Message, MsgpackRpcCodec};
use rpcmux_value::{Params, Value};
use tokio_util::codec::Decoder;

pub(crate) fn start<S: Io>(io: S, opts: &ConnectOpts) -> Parts<S> {
    let codec = MsgpackRpcCodec::new(Limits {
        max_message: opts.max_reply,
        ..Limits::default()
    });
    Parts {
        io,
        input: BytesMut::new(),
        encode: Box::new(Requests),
        decode: Box::new(Replies(codec)),
    }
}

pub(crate) struct Requests;

impl Encode for Requests {
    fn encode(&self, id: u32, method: &str, params: &Params) -> Result<Bytes, ClientError> {
        let Params::Positional(params) = params else {
            return Err(ClientError::Unsupported(
                "msgpack-rpc carries parameters by position only".into(),
            ));
        };
        let mut out = BytesMut::with_capacity(128);
        encode_request(&mut out, id, method, params)
            .map_err(|e| ClientError::Protocol(format!("cannot encode the request: {e}")))?;
        Ok(out.freeze())
    }
}

struct Replies(MsgpackRpcCodec);

impl Decode for Replies {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, ClientError> {
        let msg = self
            .0
            .decode(buf)
            .map_err(|e| ClientError::Protocol(format!("msgpack-rpc: {e}")))?;
        Ok(msg.map(|m| match m {
            Message::Response {
                msgid,
                error: Value::Nil,
                result,
            } => Incoming::Reply {
                id: msgid,
                reply: Ok(result),
            },
            Message::Response { msgid, error, .. } => Incoming::Reply {
                id: msgid,
                reply: Err(value_to_error(&error)),
            },
            // Server events: [2, name, [params]] (the params as the one argument).
            Message::Notification { method, mut params } => {
                let params = match params.len() {
                    1 => params.pop().unwrap_or(Value::Nil),
                    _ => Value::Array(params),
                };
                Incoming::Event(Event::from_notification(method, params))
            }
            _ => Incoming::Other,
        }))
    }
}
