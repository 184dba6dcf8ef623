//! Answering a JSON-RPC body, shared by the HTTP and raw-TCP framers.

use crate::verbs::{CallContext, VerbTable};
use futures_util::stream::{self, StreamExt};
use rpcmux_jsonrpc::{write_error, write_result, Failed, Id, Incoming, Request};
use rpcmux_value::RpcError;
use std::sync::Arc;

/// Run what `incoming` asks and write the reply body into `out`. Returns false when
/// there is nothing to send (a notification, or a batch of notifications only).
/// Batch members run concurrently, at most `parallel` at a time, and answer in order.
pub(crate) async fn answer(
    verbs: Arc<VerbTable>,
    ctx: CallContext,
    incoming: Incoming,
    parallel: usize,
    out: &mut Vec<u8>,
) -> bool {
    match incoming {
        Incoming::Single(item) => match one(&verbs, ctx, item).await {
            Some((id, r)) => {
                write_one(out, &id, r);
                true
            }
            None => false,
        },
        Incoming::Batch(items) => {
            let replies: Vec<_> = stream::iter(items)
                .map(|item| one(&verbs, ctx.clone(), item))
                .buffered(parallel.max(1))
                .collect()
                .await;
            let mut first = true;
            for (id, r) in replies.into_iter().flatten() {
                out.push(if first { b'[' } else { b',' });
                first = false;
                write_one(out, &id, r);
            }
            if first {
                return false;
            }
            out.push(b']');
            true
        }
    }
}

/// One call; `None` for a notification (run, but not answered).
async fn one(
    verbs: &VerbTable,
    ctx: CallContext,
    item: Result<Request, Failed>,
) -> Option<(Id, Result<rpcmux_value::Value, RpcError>)> {
    match item {
        Err(f) => Some((f.id, Err(f.error))),
        Ok(req) => {
            let result = verbs.call(&req.method, req.params, ctx).await;
            req.id.map(|id| (id, result))
        }
    }
}

fn write_one(out: &mut Vec<u8>, id: &Id, r: Result<rpcmux_value::Value, RpcError>) {
    match r {
        Ok(v) => write_result(out, id, &v),
        Err(e) => write_error(out, id, &e),
    }
}

/// A reply body for an error that answers the whole message (parse error, too large).
pub(crate) fn error_body(err: &RpcError) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write_error(&mut out, &Id::Null, err);
    out
}
