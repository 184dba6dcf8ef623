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

/// Why `ctx`'s caller may not call `verb` (the verb found for `method`, if any: an alias
/// is checked as the verb it names, a name with no verb by the name asked for, so a
/// forbidden caller learns nothing of which verbs exist). `None`: go ahead.
pub(crate) fn refusal(ctx: &CallContext, method: &str, verb: Option<&Verb>) -> Option<RpcError> {
    let name = verb.map_or(method, |v| v.name.as_str());
    if verb.is_some_and(|v| v.policy.authenticated) && ctx.principal().is_none() {
        return Some(not_authenticated(name));
    }
    let caller = ctx.caller.as_ref()?;
    if ALWAYS.contains(&name) {
        return None;
    }
    match caller.allows(name) {
        Decision::Allowed => None,
        Decision::NotAuthenticated => Some(not_authenticated(name)),
        Decision::Forbidden => Some(forbidden(name, ctx)),
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
