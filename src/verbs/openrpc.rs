//! `rpc.discover`: the verb table as an OpenRPC 1.3 document, so JSON-RPC tooling
//! (playgrounds, client generators) can read every verb with its parameter and result
//! schemas, errors and aliases.

use crate::codes::{ERR_BUSY, ERR_TIMEOUT};
use crate::verbs::dispatched::Reply;
use crate::verbs::output::Output;
use crate::verbs::verb::Verb;
use crate::verbs::RegisterError;
use crate::verbs::{Args, CallContext, VerbTable};
use rpcmux_value::RpcError;
use serde_json::{json, Value as Json};

/// The OpenRPC version the document follows.
const OPENRPC: &str = "1.3.2";

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("rpc.discover")
        .returns("struct")
        .help("Describe every verb as an OpenRPC 1.3 document (https://spec.open-rpc.org).")
        .builtin(discover)?;
    Ok(())
}

fn discover(t: &VerbTable, _: Args, ctx: CallContext) -> Reply {
    let doc = document(t, &ctx);
    Box::pin(std::future::ready(Ok(Output::Typed(Box::new(doc)))))
}

/// The OpenRPC document for `t`. Names starting with `rpc.` are reserved by OpenRPC
/// and left out; each alias is listed as a method of its own (callers can call it),
/// whose description names its target. Only verbs `ctx`'s caller may call are listed.
pub(crate) fn document(t: &VerbTable, ctx: &CallContext) -> Json {
    let mut methods = Vec::new();
    for verb in t.verbs() {
        if verb.name.starts_with("rpc.") || !crate::verbs::access::may_call(ctx, &verb) {
            continue;
        }
        methods.push(method(&verb.name, &verb, &verb.help));
        for alias in t.aliases_of(&verb.name) {
            let help = format!("Alias of {}. {}", verb.name, verb.help);
            methods.push(method(alias, &verb, help.trim_end()));
        }
    }
    json!({
        "openrpc": OPENRPC,
        "info": {
            "title": "rpcmux",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Every verb is callable over XML-RPC, JSON-RPC 2.0 (HTTP, raw TCP, STOMP) and MessagePack-RPC.",
        },
        "methods": methods,
    })
}

fn method(name: &str, verb: &Verb, help: &str) -> Json {
    let params: Vec<Json> = verb
        .params
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "required": !p.optional,
                "schema": p.schema,
            })
        })
        .collect();
    let mut m = json!({
        "name": name,
        "params": params,
        "result": { "name": "result", "schema": verb.result },
        "paramStructure": "either",
        "errors": errors(verb),
    });
    if !help.is_empty() {
        m["description"] = Json::from(help);
    }
    m
}

/// The errors every call may get from the table, plus those its policy adds.
fn errors(verb: &Verb) -> Vec<Json> {
    let mut e = vec![json!({
        "code": RpcError::INVALID_PARAMS,
        "message": "Invalid params: a parameter is missing, unknown or of the wrong type",
    })];
    if let Some(t) = verb.policy.timeout {
        e.push(json!({
            "code": ERR_TIMEOUT,
            "message": format!("Timed out after {t:?}; the call was cancelled"),
        }));
    }
    if let Some(l) = &verb.policy.limit {
        if l.when_busy == crate::verbs::WhenBusy::Refuse {
            e.push(json!({
                "code": ERR_BUSY,
                "message": format!("Busy: {} call(s) already running", l.max),
            }));
        }
    }
    e
}
