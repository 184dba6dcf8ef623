//! Batches to an XML-RPC upstream as one `system.multicall` (`multicall = true`, the
//! default, and the upstream listing `system.multicall` when its verbs were learned):
//! one HTTP request for a JSON-RPC batch, a msgpack pipeline or a client's own
//! multicall, instead of one per member.
//!
//! Each member's result is its own: a value, or the upstream's fault for that call
//! with its code and message. A failure of the request itself (unreachable, timed out,
//! overloaded, a bad reply) is every member's error. The multicall is sent again after
//! a lost connection only if every member's verb is listed as idempotent.

use crate::codes::ERR_UPSTREAM_BAD_REPLY;
use crate::gateway::forward::{Caller, Upstream};
use crate::verbs::BatchTarget;
use futures_util::future::BoxFuture;
use rpcmux_value::{vstruct, Params, RpcError, Value};
use std::net::SocketAddr;
use std::sync::Arc;

/// The upstream as the verb table's batch target.
pub(super) struct Multicall(pub Arc<Upstream>);

impl BatchTarget for Multicall {
    fn groups(&self) -> bool {
        self.0.multicall()
    }

    fn call_many(
        &self,
        calls: Vec<(Arc<str>, Params)>,
        peer: Option<SocketAddr>,
    ) -> BoxFuture<'static, Vec<Result<Value, RpcError>>> {
        let up = self.0.clone();
        Box::pin(async move { call_many(&up, calls, peer).await })
    }
}

async fn call_many(
    up: &Upstream,
    calls: Vec<(Arc<str>, Params)>,
    peer: Option<SocketAddr>,
) -> Vec<Result<Value, RpcError>> {
    let retry = calls.iter().all(|(m, _)| up.idempotent(m));
    // XML-RPC has positional parameters only: a member by name is refused alone, as
    // it would be on its own, and the others still go.
    let mut results: Vec<Option<Result<Value, RpcError>>> = Vec::with_capacity(calls.len());
    let mut sent = Vec::with_capacity(calls.len());
    for (method, params) in calls {
        match params {
            Params::Positional(p) => {
                results.push(None);
                sent.push(vstruct! { "methodName" => &*method, "params" => Value::Array(p) });
            }
            Params::Named(_) => results.push(Some(Err(RpcError::invalid_params(format!(
                "{method} is served by upstream {}, which takes parameters by position only",
                up.name
            ))))),
        }
    }
    let n = sent.len();
    let reply = match n {
        0 => Ok(Value::Array(Vec::new())),
        _ => {
            let params = Params::Positional(vec![Value::Array(sent)]);
            let caller = Caller { peer, name: None };
            up.forward_as("system.multicall", params, caller, retry)
                .await
        }
    };
    let mut answers = match reply {
        Ok(Value::Array(a)) if a.len() == n => a.into_iter().map(member),
        Ok(_) => {
            let e = RpcError::new(
                ERR_UPSTREAM_BAD_REPLY,
                format!(
                    "upstream {}: system.multicall did not answer one result per call",
                    up.name
                ),
            );
            return fill(results, e);
        }
        Err(e) => return fill(results, e),
    };
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                answers
                    .next()
                    .unwrap_or_else(|| Err(RpcError::internal("missing")))
            })
        })
        .collect()
}

/// One element of a multicall answer: `[value]`, or a `{faultCode, faultString}` fault.
fn member(v: Value) -> Result<Value, RpcError> {
    match v {
        Value::Array(mut a) if a.len() == 1 => Ok(a.pop().unwrap_or_default()),
        Value::Struct(m) => {
            let code = m.get("faultCode").and_then(Value::as_i64);
            let text = m.get("faultString").and_then(Value::as_str);
            match (code, text) {
                (Some(code), Some(text)) => Err(RpcError::new(code, text)),
                _ => Err(bad_member()),
            }
        }
        _ => Err(bad_member()),
    }
}

fn bad_member() -> RpcError {
    RpcError::new(
        ERR_UPSTREAM_BAD_REPLY,
        "upstream system.multicall answered a member with neither [result] nor a fault",
    )
}

/// Every member not already answered gets `e`.
fn fill(
    results: Vec<Option<Result<Value, RpcError>>>,
    e: RpcError,
) -> Vec<Result<Value, RpcError>> {
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(e.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_results_or_faults() {
        assert_eq!(member(Value::Array(vec![7.into()])), Ok(Value::Int(7)));
        let f = member(vstruct! { "faultCode" => 10, "faultString" => "BAD_NAME" }).unwrap_err();
        assert_eq!((f.code, f.message.as_str()), (10, "BAD_NAME"));
        assert_eq!(
            member(Value::from(3)).unwrap_err().code,
            ERR_UPSTREAM_BAD_REPLY
        );
        assert_eq!(
            member(Value::Array(vec![])).unwrap_err().code,
            ERR_UPSTREAM_BAD_REPLY
        );
    }
}
