//! Answering an XML-RPC body (HTTP POST with `text/xml`): parse, dispatch, write.
//! Every failure, including a body that is not XML at all, is answered with a
//! `<fault>` in an HTTP 200, never an empty reply.

use crate::server::{ConnInfo, Shared};
use rpcmux_value::{Params, RpcError};

/// The reply body for one XML-RPC request body.
pub(crate) async fn answer(body: &[u8], shared: &Shared, info: &ConnInfo) -> Vec<u8> {
    let call = match rpcmux_xmlrpc::parse_call(body, &rpcmux_xmlrpc::Limits::default()) {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(peer = %info.peer, error = %e, "bad XML-RPC request");
            return fault_body(&e);
        }
    };
    let ctx = info.call_context("xmlrpc", shared);
    let result = shared
        .verbs
        .call(&call.method, Params::Positional(call.params), ctx)
        .await;
    let mut out = Vec::with_capacity(body.len() + 256);
    match result {
        Ok(v) => rpcmux_xmlrpc::write_response(&mut out, &v),
        Err(e) => rpcmux_xmlrpc::write_fault(&mut out, &e),
    }
    out
}

pub(crate) fn fault_body(err: &RpcError) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    rpcmux_xmlrpc::write_fault(&mut out, err);
    out
}
