//! `system.multicall`: many calls in one request, as XML-RPC clients batch them
//! (Python's `xmlrpc.client.MultiCall`). Calls run concurrently, at most
//! [`PARALLEL`] at a time, and answer in order: a result as a one-element array,
//! a failure as a `{faultCode, faultString}` struct in its place.

use crate::verbs::dispatched::Reply;
use crate::verbs::output::Output;
use crate::verbs::RegisterError;
use crate::verbs::{Args, CallContext, VerbTable};
use futures_util::stream::{self, StreamExt};
use rpcmux_value::{vstruct, Params, RpcError, Value};
use serde_json::json;

/// Concurrent calls per multicall.
pub const PARALLEL: usize = 32;

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("system.multicall")
        .typed_param("calls", "array", false)
        .param_schema(json!({
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "methodName": {"type": "string"},
                    "params": {"type": "array", "items": {}}
                },
                "required": ["methodName"]
            }
        }))
        .returns("array")
        .help("Run an array of {methodName, params} calls; return [result] or a fault struct for each, in order.")
        .builtin_returning(
            multicall,
            json!({
                "type": "array",
                "items": {
                    "oneOf": [
                        {"title": "result", "type": "array", "items": {}, "minItems": 1, "maxItems": 1},
                        {
                            "title": "fault",
                            "type": "object",
                            "properties": {
                                "faultCode": {"type": "integer"},
                                "faultString": {"type": "string"}
                            },
                            "required": ["faultCode", "faultString"]
                        }
                    ]
                }
            }),
        )?;
    Ok(())
}

fn multicall(t: &VerbTable, mut args: Args, ctx: CallContext) -> Reply {
    let calls: Vec<Value> = match args.take(0) {
        Ok(c) => c,
        Err(e) => return Box::pin(std::future::ready(Err(e))),
    };
    if calls.len() > t.max_batch {
        let e = RpcError::invalid_request(format!(
            "multicall of more than {} calls (max_batch)",
            t.max_batch
        ));
        return Box::pin(std::future::ready(Err(e)));
    }
    let mut calls: Vec<Option<Result<Call, RpcError>>> =
        calls.into_iter().map(|c| Some(split_call(c))).collect();
    // Consecutive calls for one upstream with a multicall of its own go on as one
    // (batch.rs); the others one by one.
    let methods: Vec<Option<&str>> = calls
        .iter()
        .map(|c| match c {
            Some(Ok((m, _))) if m != "system.multicall" => Some(m.as_str()),
            _ => None,
        })
        .collect();
    let runs = crate::verbs::batch::plan(t, &methods, t.max_batch, &ctx);
    // Start every call now (each borrows the table only while starting), run them later.
    let pending: Vec<GroupReply> = runs
        .into_iter()
        .map(|run| match run {
            crate::verbs::batch::Run::One(i) => {
                let one = match calls[i].take().expect("each call once") {
                    Ok((method, _)) if method == "system.multicall" => {
                        Box::pin(std::future::ready(Err(RpcError::invalid_request(
                            "system.multicall cannot be nested",
                        )))) as ValueReply
                    }
                    Ok((method, params)) => {
                        t.call(&method, Params::Positional(params), ctx.clone())
                    }
                    Err(e) => Box::pin(std::future::ready(Err(e))),
                };
                Box::pin(async move { vec![one.await] }) as GroupReply
            }
            crate::verbs::batch::Run::Group(range, verbs) => {
                let group: Vec<_> = verbs
                    .into_iter()
                    .zip(range.filter_map(|i| calls[i].take()?.ok()))
                    .map(|(v, (_, params))| (v, Params::Positional(params)))
                    .collect();
                let fut = t.dispatch_group(group, ctx.clone());
                Box::pin(async move {
                    let r = fut.await;
                    r.into_iter()
                        .map(|r| r.and_then(Output::into_value))
                        .collect()
                })
            }
        })
        .collect();
    Box::pin(async move {
        let results: Vec<Value> = stream::iter(pending)
            .buffered(PARALLEL)
            .flat_map(stream::iter)
            .map(|r| match r {
                Ok(v) => Value::Array(vec![v]),
                Err(e) => vstruct! { "faultCode" => e.code.clamp(i32::MIN as i64, i32::MAX as i64), "faultString" => e.message },
            })
            .collect()
            .await;
        Ok(Output::Value(Value::Array(results)))
    })
}

type GroupReply = futures_util::future::BoxFuture<'static, Vec<Result<Value, RpcError>>>;
type ValueReply = futures_util::future::BoxFuture<'static, Result<Value, RpcError>>;

/// One call of a multicall: its method and positional parameters.
type Call = (String, Vec<Value>);

fn split_call(call: Value) -> Result<Call, RpcError> {
    let Value::Struct(mut m) = call else {
        return Err(RpcError::invalid_params("each call must be a struct"));
    };
    let method = match m.swap_remove("methodName") {
        Some(Value::String(s)) => s.into_string(),
        _ => return Err(RpcError::invalid_params("call without a methodName string")),
    };
    let params = match m.swap_remove("params") {
        Some(Value::Array(a)) => a,
        None => Vec::new(),
        Some(_) => return Err(RpcError::invalid_params("params must be an array")),
    };
    Ok((method, params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventHub;
    use std::sync::Arc;

    #[tokio::test]
    async fn results_in_order_faults_in_place() {
        let mut t = VerbTable::new();
        t.verb("echo")
            .param("v")
            .handler(|mut a, _| async move { Ok(a.take_value(0)) })
            .unwrap();
        t.verb("slow")
            .handler(|_, _| async {
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                Ok(Value::from("slow"))
            })
            .unwrap();
        let call =
            |m: &str, p: Vec<Value>| vstruct! { "methodName" => m, "params" => Value::Array(p) };
        let calls = Value::Array(vec![
            call("slow", vec![]),
            call("echo", vec![1.into()]),
            call("nope", vec![]),
            Value::from(3),
            call("system.multicall", vec![]),
        ]);
        let ctx = CallContext::new("test", Arc::new(EventHub::default()));
        let r = t
            .call("system.multicall", Params::Positional(vec![calls]), ctx)
            .await
            .unwrap();
        let r = r.as_array().unwrap();
        assert_eq!(r[0], Value::Array(vec!["slow".into()]));
        assert_eq!(r[1], Value::Array(vec![1.into()]));
        assert_eq!(r[2].get("faultCode"), Some(&Value::Int(-32601)));
        assert_eq!(r[3].get("faultCode"), Some(&Value::Int(-32602)));
        assert_eq!(r[4].get("faultCode"), Some(&Value::Int(-32600)));
    }
}
