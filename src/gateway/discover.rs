//! Learning an upstream's verbs: XML-RPC introspection (`system.listMethods`, then
//! `system.methodHelp` and `system.methodSignature` per verb), else OpenRPC's
//! `rpc.discover`, else the `methods` list from the settings.
//!
//! Discovery calls go through [`Upstream::forward`], so they use the same pool,
//! failover and timeout as the calls that follow.

use super::forward::Upstream;
use futures_util::stream::{self, StreamExt};
use rpcmux_value::{Params, RpcError, Value};

/// Introspection calls in flight at once while describing the verbs.
const PARALLEL: usize = 8;

/// One verb the upstream serves, as it describes it.
pub(super) struct Found {
    /// Its name on the upstream.
    pub name: String,
    pub help: String,
    /// `[[return, params...], ...]` when the upstream gives real ones.
    pub signatures: Option<Vec<Vec<String>>>,
}

/// Where the list came from, for the startup log.
pub(super) type Source = &'static str;

/// The upstream's verbs, or why there are none to serve. `strict` (a refresh while
/// serving): an upstream that could not be asked (unreachable, timed out, overloaded,
/// a bad reply) is a failure even with a `methods` list, so the verbs learned before
/// are kept rather than replaced by that list; one that answered with a fault of its
/// own has no introspection, and gets the list.
pub(super) async fn discover(
    up: &Upstream,
    configured: &[String],
    strict: bool,
) -> Result<(Vec<Found>, Source), RpcError> {
    let listed = up
        .forward("system.listMethods", Params::default(), None)
        .await;
    if let Ok(Value::Array(names)) = &listed {
        let names: Vec<String> = names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        let found = stream::iter(names)
            .map(|name| describe(up, name))
            .buffered(PARALLEL)
            .collect::<Vec<_>>()
            .await;
        return Ok((found, "system.listMethods"));
    }
    let discovered = up.forward("rpc.discover", Params::default(), None).await;
    let methods = discovered.as_ref().ok().and_then(|d| d.get("methods"));
    if let Some(Value::Array(methods)) = methods {
        let found = methods.iter().filter_map(openrpc_method).collect();
        return Ok((found, "rpc.discover"));
    }
    if !configured.is_empty() {
        if let Some(e) = [&listed, &discovered]
            .into_iter()
            .filter_map(|r| r.as_ref().err())
            .find(|e| e.code != RpcError::METHOD_NOT_FOUND)
        {
            if strict && unanswered(e) {
                return Err(e.clone());
            }
            tracing::warn!(upstream = %up.name, error = %e.message, "cannot ask the upstream for its verbs; serving the methods setting");
        }
        let found = configured
            .iter()
            .map(|name| Found {
                name: name.clone(),
                help: String::new(),
                signatures: None,
            })
            .collect();
        return Ok((found, "the methods setting"));
    }
    // Say why: the first failure that was not "no such method" (the upstream being
    // down matters more than its lacking introspection).
    let err = [listed, discovered]
        .into_iter()
        .filter_map(Result::err)
        .find(|e| e.code != RpcError::METHOD_NOT_FOUND)
        .unwrap_or_else(|| {
            RpcError::new(
                RpcError::METHOD_NOT_FOUND,
                "it has neither system.listMethods nor rpc.discover; list its verbs in `methods`",
            )
        });
    Err(err)
}

/// Whether `e` says the upstream gave no answer of its own (the gateway's -32010..-32013).
fn unanswered(e: &RpcError) -> bool {
    use super::{ERR_UPSTREAM_BAD_REPLY, ERR_UPSTREAM_UNREACHABLE};
    (ERR_UPSTREAM_BAD_REPLY..=ERR_UPSTREAM_UNREACHABLE).contains(&e.code)
}

/// Help and signatures of one listed verb; either may be missing (a fault, or
/// Python's "signatures not supported" string): the verb is served all the same.
async fn describe(up: &Upstream, name: String) -> Found {
    let arg = || Params::Positional(vec![Value::from(name.as_str())]);
    let help = match up.forward("system.methodHelp", arg(), None).await {
        Ok(Value::String(h)) => h,
        _ => String::new(),
    };
    // Python's SimpleXMLRPCServer answers the string "signatures not supported".
    let signatures = match up.forward("system.methodSignature", arg(), None).await {
        Ok(Value::Array(sigs)) => signatures(&sigs),
        _ => None,
    };
    Found {
        name,
        help,
        signatures,
    }
}

/// `[[string...]...]` (the XML-RPC introspection spec), or one flat `[string...]`
/// (what supervisord answers); `None` when any part is something else.
fn signatures(sigs: &[Value]) -> Option<Vec<Vec<String>>> {
    if !sigs.is_empty() && sigs.iter().all(|s| s.as_str().is_some()) {
        return Some(vec![sigs
            .iter()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect()]);
    }
    sigs.iter()
        .map(|s| {
            s.as_array()?
                .iter()
                .map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .collect::<Option<Vec<Vec<String>>>>()
        .filter(|s| !s.is_empty())
}

/// A method of an OpenRPC document: its name, and its description (or summary) as help.
fn openrpc_method(m: &Value) -> Option<Found> {
    let name = m.get("name")?.as_str()?.to_owned();
    let help = ["description", "summary"]
        .iter()
        .find_map(|k| m.get(k).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    Some(Found {
        name,
        help,
        signatures: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    #[test]
    fn signatures_only_when_well_formed() {
        let ok = vec![Value::Array(vec!["struct".into(), "string".into()])];
        assert_eq!(
            signatures(&ok),
            Some(vec![vec!["struct".to_string(), "string".to_string()]])
        );
        let flat = [Value::from("boolean"), Value::from("string")];
        assert_eq!(
            signatures(&flat),
            Some(vec![vec!["boolean".to_string(), "string".to_string()]])
        );
        let mixed = [Value::from("int"), Value::Array(vec![])];
        assert_eq!(signatures(&mixed), None);
        assert_eq!(signatures(&[]), None);
        let m = vstruct! { "name" => "add", "summary" => "Add." };
        let f = openrpc_method(&m).unwrap();
        assert_eq!((f.name.as_str(), f.help.as_str()), ("add", "Add."));
        assert!(openrpc_method(&Value::from(3)).is_none());
    }
}
