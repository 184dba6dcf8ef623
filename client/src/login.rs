//! `rpc.login` on the stream protocols without headers (JSON-RPC over TCP,
//! msgpack-rpc): called once, right after connecting and before any other call, so
//! every later call on the connection is the logged-in principal's. A refusal fails the
//! connect; the error names the server's reply, which never quotes the secret.

use crate::stream::{Incoming, Parts};
use crate::{ClientError, ClientProto, Credentials, Io};
use rpcmux_value::RpcError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The id of the login call; the calls after it start again from 0.
const LOGIN_ID: u32 = u32::MAX;

/// Log in on `parts` with `credentials`, if any. A server without authentication has
/// no `rpc.login` (method not found): the credentials are not needed there, and the
/// connection goes on as HTTP's does when a server ignores `Authorization`.
pub(crate) async fn login<S: Io>(
    mut parts: Parts<S>,
    proto: ClientProto,
    credentials: Option<&Credentials>,
    max_reply: usize,
) -> Result<Parts<S>, ClientError> {
    let Some(c) = credentials else {
        return Ok(parts);
    };
    let params = c.login_params(proto.named_params());
    let bytes = parts.encode.encode(LOGIN_ID, "rpc.login", &params)?;
    parts.io.write_all(&bytes).await?;
    loop {
        while let Some(item) = parts.decode.decode(&mut parts.input)? {
            match item {
                Incoming::Reply {
                    id: LOGIN_ID,
                    reply: Ok(_),
                } => return Ok(parts),
                Incoming::Reply {
                    id: LOGIN_ID,
                    reply: Err(e),
                } if e.code == RpcError::METHOD_NOT_FOUND => {
                    tracing::debug!("the server has no rpc.login: it does not authenticate");
                    return Ok(parts);
                }
                Incoming::Reply {
                    id: LOGIN_ID,
                    reply: Err(e),
                } => {
                    return Err(ClientError::Connect(format!(
                        "{proto}: rpc.login refused (error {}: {})",
                        e.code, e.message
                    )))
                }
                // Nothing else was asked; an event or a stray reply is skipped.
                _ => {}
            }
        }
        if parts.input.len() > max_reply {
            return Err(ClientError::Protocol(format!(
                "rpc.login reply larger than {max_reply} bytes"
            )));
        }
        parts.input.reserve(4096);
        if parts.io.read_buf(&mut parts.input).await? == 0 {
            return Err(ClientError::Connect(format!(
                "{proto}: closed by the server before it answered rpc.login"
            )));
        }
    }
}
