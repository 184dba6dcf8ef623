//! Answering an XML-RPC body (HTTP POST with `text/xml`): parse, dispatch, write.
//! Every failure, including a body that is not XML at all, is answered with a
//! `<fault>` in an HTTP 200, never an empty reply. Big bodies are parsed and big
//! replies written off the async workers; a reply past `max_reply` is a fault (-32003).

use crate::conn::reply_cap::ReplyCap;
use crate::conn::ConnInfo;
use crate::offload;
use crate::shared::Shared;
use crate::verbs::{Dispatched, Encode, Found, Input, Output};
use bytes::Bytes;
use rpcmux_value::{Params, RpcError};

/// The reply body for one XML-RPC request body.
pub(crate) async fn answer(body: Bytes, shared: &Shared, info: &ConnInfo) -> Vec<u8> {
    let size = body.len();
    let cap = shared.reply_cap();
    let mut out = Vec::new();
    let started = match size < offload::OFFLOAD_AT {
        true => start_typed(&body, shared, info, &mut out),
        false => None,
    };
    let result = match started {
        // A sync typed verb's result, written as it returned it.
        Some(Dispatched::Written) => return capped(out, &cap),
        Some(started) => started.await,
        None => {
            let parsed = offload::run(size, move || {
                rpcmux_xmlrpc::parse_call(&body, &rpcmux_xmlrpc::Limits::default())
            })
            .await;
            let call = match parsed {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(peer = %info.peer, error = %e, "bad XML-RPC request");
                    return fault_body(&e);
                }
            };
            let ctx = shared.call_context(info, info.http_protocol("xmlrpc", "xmlrpc-h2"));
            let params = Input::Tree(Params::Positional(call.params));
            shared.verbs.dispatch(&call.method, params, ctx).await
        }
    };
    offload::run(size, move || {
        let mut out = Vec::with_capacity(size.min(1 << 20) + 256);
        // A typed result is written straight to XML, with no value tree between.
        let written = match result {
            Ok(Output::Value(v)) => rpcmux_xmlrpc::try_write_response(&mut out, &v),
            Ok(Output::Typed(t)) => t.to_xmlrpc_response(&mut out),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            rpcmux_xmlrpc::write_fault(&mut out, &e);
        }
        capped(out, &cap)
    })
    .await
}

/// A reply body, or the fault for one past `max_reply` (-32003).
fn capped(out: Vec<u8>, cap: &ReplyCap) -> Vec<u8> {
    match cap.check(out.len()) {
        Ok(()) => out,
        Err(e) => fault_body(&e),
    }
}

/// A small call to a typed verb, its params read straight from the document into the
/// verb's type (no value tree), a sync verb's result written into `out` as it returns
/// it ([`Dispatched::Written`]); `None` for anything else, or params that cannot be read
/// so: the call is then parsed as values, as every call was before.
fn start_typed(
    body: &[u8],
    shared: &Shared,
    info: &ConnInfo,
    out: &mut Vec<u8>,
) -> Option<Dispatched> {
    let call = rpcmux_xmlrpc::CallParams::open(body, &rpcmux_xmlrpc::Limits::default()).ok()?;
    let Found::Local(verb) = shared.verbs.find(call.method()) else {
        return None;
    };
    let ctx = shared.call_context(info, info.http_protocol("xmlrpc", "xmlrpc-h2"));
    let mut write_now = |r: &dyn Encode| {
        out.reserve(body.len() + 256);
        // A result XML-RPC cannot express goes the boxed way, which answers the fault.
        let at = out.len();
        match r.to_xmlrpc_response(out) {
            Ok(()) => true,
            Err(_) => {
                out.truncate(at);
                false
            }
        }
    };
    shared.verbs.dispatch_xml(verb, call, &ctx, &mut write_now)
}

pub(crate) fn fault_body(err: &RpcError) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    rpcmux_xmlrpc::write_fault(&mut out, err);
    out
}
