//! Who may call what, checked where every call passes: [`refusal`] is asked by
//! `VerbTable::dispatch_found` (direct calls, batch members, `system.multicall`'s calls,
//! aliases and forwarded verbs all go through it), by `VerbTable::dispatch_group` for
//! calls grouped into one upstream request (each member checked, a refused one not
//! sent), and by the typed fast paths, which step aside for a refused call so that the
//! dispatch path answers it.

use crate::codes::{ERR_FORBIDDEN, ERR_NOT_AUTHENTICATED};
use crate::verbs::verb::Verb;
use crate::verbs::CallContext;
use rpcmux_auth::Decision;
use rpcmux_value::RpcError;

/// Verbs every caller may call: `rpc.login` is how one proves who one is, and
/// `system.multicall` runs nothing itself (each of its calls is checked).
const ALWAYS: [&str; 2] = ["rpc.login", "system.multicall"];

/// Verbs every authenticated caller may call, whatever its rules: each shows only what
/// the caller may call or see already (introspection lists the verbs it may call,
/// `subscribe` delivers the events its rules show), so a user whose rules name only
/// its own verbs still has a working `s.system.listMethods()` and console.
const AUTHENTICATED: [&str; 5] = [
    "system.listMethods",
    "system.methodHelp",
    "system.methodSignature",
    "rpc.discover",
    "subscribe",
];

/// Why `ctx`'s caller may not call `verb` (the verb found for `method`, if any: an alias
/// is checked as the verb it names, a name with no verb by the name asked for). `None`:
/// go ahead. A refusal names `method`, the name asked for, never an alias's target: a
/// caller who may not call a name learns nothing of what is behind it, and an alias, a
/// verb and a name with no verb are refused alike.
pub(crate) fn refusal(ctx: &CallContext, method: &str, verb: Option<&Verb>) -> Option<RpcError> {
    let name = verb.map_or(method, |v| v.name.as_str());
    if verb.is_some_and(|v| v.policy.authenticated) && ctx.principal().is_none() {
        return Some(not_authenticated(method));
    }
    let caller = ctx.caller.as_ref()?;
    if ALWAYS.contains(&name) {
        return None;
    }
    if AUTHENTICATED.contains(&name) && ctx.principal().is_some() {
        return None;
    }
    match caller.allows(name) {
        Decision::Allowed => None,
        Decision::NotAuthenticated => Some(not_authenticated(method)),
        Decision::Forbidden => Some(forbidden(method, ctx)),
    }
}

/// Whether `ctx`'s caller may call `name` (introspection lists only those).
pub(crate) fn may_call(ctx: &CallContext, verb: &Verb) -> bool {
    refusal(ctx, &verb.name, Some(verb)).is_none()
}

fn not_authenticated(verb: &str) -> RpcError {
    RpcError::new(
        ERR_NOT_AUTHENTICATED,
        format!("not authenticated: {} needs credentials", shown(verb)),
    )
}

fn forbidden(verb: &str, ctx: &CallContext) -> RpcError {
    let who = ctx.principal();
    RpcError::new(
        ERR_FORBIDDEN,
        format!(
            "forbidden: {} may not call {}",
            who.as_deref().unwrap_or("this caller"),
            shown(verb)
        ),
    )
}

/// A verb name as an error shows it: what the client sent, cut short.
fn shown(verb: &str) -> String {
    let cut: String = verb.chars().take(64).collect();
    format!("{cut:?}")
}
