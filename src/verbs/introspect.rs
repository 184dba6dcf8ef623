//! The built-in introspection verbs, as XML-RPC clients know them.

use crate::verbs::access::may_call;
use crate::verbs::dispatched::Reply;
use crate::verbs::output::Output;
use crate::verbs::RegisterError;
use crate::verbs::{Args, CallContext, VerbTable};
use rpcmux_value::{RpcError, Value};
use serde_json::json;

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("system.listMethods")
        .returns("array")
        .help("List the names of every callable method.")
        .builtin_returning(
            list_methods,
            json!({"type": "array", "items": {"type": "string"}}),
        )?;
    t.verb("system.methodHelp")
        .typed_param("method", "string", false)
        .returns("string")
        .help("Return the help text of a method.")
        .builtin(method_help)?;
    t.verb("system.methodSignature")
        .typed_param("method", "string", false)
        .returns("array")
        .help("Return a method's signatures: [[return type, param types...]].")
        .builtin_returning(
            method_signature,
            json!({
                "type": "array",
                "items": {"type": "array", "items": {"type": "string"}, "minItems": 1}
            }),
        )?;
    Ok(())
}

fn ready(r: Result<Value, RpcError>) -> Reply {
    Box::pin(std::future::ready(r.map(Output::Value)))
}

/// Every name the caller may call (with authentication on, only those its principal
/// may: introspection shows no forbidden verb).
fn list_methods(t: &VerbTable, _: Args, ctx: CallContext) -> Reply {
    let names = t
        .names()
        .into_iter()
        .filter(|n| ctx.caller.is_none() || t.get(n).is_some_and(|v| may_call(&ctx, &v)));
    ready(Ok(Value::Array(names.map(Value::from).collect())))
}

/// The verb a `system.method*` call asks about; one the caller may not call is as
/// unknown to it as one that does not exist.
fn target(
    t: &VerbTable,
    args: &mut Args,
    ctx: &CallContext,
) -> Result<std::sync::Arc<crate::verbs::Verb>, RpcError> {
    let name: String = args.take(0)?;
    t.get(&name)
        .filter(|v| may_call(ctx, v))
        .ok_or_else(|| RpcError::method_not_found(&name))
}

fn method_help(t: &VerbTable, mut args: Args, ctx: CallContext) -> Reply {
    ready(target(t, &mut args, &ctx).map(|v| {
        let policy = v.policy.describe();
        if policy.is_empty() {
            Value::from(v.help.clone())
        } else {
            Value::from(format!("{} ({policy})", v.help))
        }
    }))
}

fn method_signature(t: &VerbTable, mut args: Args, ctx: CallContext) -> Reply {
    ready(target(t, &mut args, &ctx).map(|v| {
        if let Some(sigs) = &v.signatures {
            return Value::Array(
                sigs.iter()
                    .map(|s| Value::Array(s.iter().map(|k| Value::from(k.as_str())).collect()))
                    .collect(),
            );
        }
        let mut sig = vec![Value::from(v.returns)];
        sig.extend(v.params.iter().map(|p| Value::from(p.kind)));
        Value::Array(vec![Value::Array(sig)])
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventHub;
    use rpcmux_value::Params;
    use std::sync::Arc;

    #[test]
    fn introspection_reads_the_table() {
        let mut t = VerbTable::new();
        t.verb("echo")
            .typed_param("value", "any", false)
            .returns("any")
            .help("Return value.")
            .handler(|mut a, _| async move { Ok(a.take_value(0)) })
            .unwrap();
        let run = |m: &str, p: Vec<Value>| {
            let ctx = CallContext::new("test", Arc::new(EventHub::default()));
            futures_util::FutureExt::now_or_never(t.call(m, Params::Positional(p), ctx)).unwrap()
        };
        let list = run("system.listMethods", vec![]).unwrap();
        assert!(list.as_array().unwrap().contains(&Value::from("echo")));
        assert!(list
            .as_array()
            .unwrap()
            .contains(&Value::from("system.methodHelp")));
        assert_eq!(
            run("system.methodHelp", vec!["echo".into()]),
            Ok("Return value.".into())
        );
        let sig = run("system.methodSignature", vec!["echo".into()]).unwrap();
        assert_eq!(
            sig,
            Value::Array(vec![Value::Array(vec!["any".into(), "any".into()])])
        );
        assert_eq!(
            run("system.methodHelp", vec!["nope".into()])
                .unwrap_err()
                .code,
            -32601
        );
        assert_eq!(run("system.methodHelp", vec![]).unwrap_err().code, -32602);
    }
}
