//! XML-RPC bodies for the HTTP client: `<methodCall>` out, `<methodResponse>` in
//! (a `<fault>` is an error reply).

use super::{json::snippet, ClientError, Reply};
use rpcmux_value::Params;
use rpcmux_xmlrpc::Limits;

pub(crate) fn write_call(method: &str, params: &Params) -> Result<Vec<u8>, ClientError> {
    let Params::Positional(params) = params else {
        return Err(ClientError::Unsupported(
            "XML-RPC carries parameters by position only".into(),
        ));
    };
    let mut out = Vec::with_capacity(256);
    // A string XML 1.0 cannot carry is refused here, not sent for the server to refuse.
    rpcmux_xmlrpc::try_write_call(&mut out, method, params)
        .map_err(|e| ClientError::Unsupported(e.message))?;
    Ok(out)
}

pub(crate) fn read_reply(body: &[u8]) -> Result<Reply, ClientError> {
    // The client trusts its server more than the server trusts clients, but a reply
    // still must not make it build without bound: the default caps apply.
    rpcmux_xmlrpc::parse_response(body, &Limits::DEFAULT).map_err(|e| {
        ClientError::Protocol(format!(
            "not an XML-RPC response ({}): {}",
            e.message,
            snippet(body, 200)
        ))
    })
}
