//! JSON-RPC 2.0 over raw TCP: one request per line out; replies split by bracket depth
//! (the server writes one per line, but the splitter does not depend on it).

use super::stream::{Decode, Encode, Incoming, Parts};
use super::{json, ClientError, ConnectOpts, Io};
use bytes::{Buf, Bytes, BytesMut};
use rpcmux_jsonrpc::{Split, Splitter};
use rpcmux_value::Params;

pub(crate) fn start<S: Io>(io: S, opts: &ConnectOpts) -> Parts<S> {
    Parts {
        io,
        input: BytesMut::new(),
        encode: Box::new(Lines),
        decode: Box::new(Replies(Splitter::new(opts.max_reply))),
    }
}

pub(crate) struct Lines;

impl Encode for Lines {
    fn encode(&self, id: u32, method: &str, params: &Params) -> Result<Bytes, ClientError> {
        let mut out = Vec::with_capacity(128);
        json::write_call(&mut out, id, method, params);
        out.push(b'\n');
        Ok(out.into())
    }
}

struct Replies(Splitter);

impl Decode for Replies {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, ClientError> {
        match self.0.next(buf) {
            Split::Value { start, end } => {
                let msg = buf.split_to(end);
                json::read_message(&msg[start..]).map(Some)
            }
            Split::Incomplete | Split::Garbage { skip: 0 } => Ok(None),
            Split::Garbage { skip } => {
                let bad = json::snippet(&buf[..skip], 200);
                buf.advance(skip);
                Err(ClientError::Protocol(format!(
                    "server sent non-JSON: {bad}"
                )))
            }
            Split::TooLarge => Err(ClientError::Protocol("reply too large".into())),
        }
    }
}
