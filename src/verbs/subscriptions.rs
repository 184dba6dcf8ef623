//! The built-in event verbs, `subscribe` and `unsubscribe`: wherever an embedder
//! publishes events, clients on connections that can carry them may receive them.

use crate::codes::ERR_NO_EVENTS_HERE;
use crate::events::Since;
use crate::verbs::RegisterError;
use crate::verbs::{CallContext, VerbTable};
use rpcmux_value::RpcError;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Subscribe {
    /// An event name or a prefix of one ending at a separator (`|virt|`), or `*` for all.
    pattern: String,
    /// Resume: an `event_id` received before, or `"0"` for every event still retained.
    /// The retained events after it that match come first, in order, then live ones;
    /// notifications then carry `event_id` in their params.
    #[serde(default)]
    since: Option<String>,
    /// Put `event_id` in this subscription's notifications (implied by `since`).
    #[serde(default)]
    resumable: Option<bool>,
    /// Send this subscription's events as notifications named `notify` in the shape
    /// jsonrpsee's and Ethereum's clients expect:
    /// `{"subscription": ID, "result": {"name": EVENT, "params": {...}}}`.
    #[serde(default)]
    notify: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Unsubscribe {
    /// The id `subscribe` returned on this connection.
    id: u64,
}

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("subscribe")
        .help("Receive server events whose name starts with pattern ('*' for all) on this connection, as notifications. Returns a subscription id, valid on this connection only. Only on connections that can carry notifications (raw-TCP JSON-RPC, msgpack-rpc, STOMP, WebSocket). With since (an event_id received before, or \"0\"), the retained events after it come first, then live ones, and notifications carry event_id; a since older than what is retained is error -32007 naming the oldest retained id. With notify (a method name), events come as notify(subscription: ID, result: {name, params}), the shape jsonrpsee's and Ethereum's clients expect.")
        .typed(|p: Subscribe, ctx: CallContext| async move {
            let session = ctx.session.clone().ok_or_else(|| {
                RpcError::new(
                    ERR_NO_EVENTS_HERE,
                    format!(
                        "{} cannot carry events; use raw-TCP JSON-RPC, msgpack-rpc or STOMP",
                        ctx.protocol
                    ),
                )
            })?;
            let since = match &p.since {
                None => None,
                Some(s) => Some(s.parse::<Since>().map_err(RpcError::invalid_params)?),
            };
            if p.notify.as_ref().is_some_and(|m| m.is_empty() || m.len() > 128) {
                return Err(RpcError::invalid_params("notify must be a method name of 1 to 128 bytes"));
            }
            let options = crate::events::SubOptions {
                resumable: p.resumable.unwrap_or(since.is_some()),
                since,
                notify: p.notify.map(Into::into),
            };
            // Made now (the replay and live events queued with no gap between them), and
            // held back until this reply is written, so a client knows the id they come
            // under (the delivery model's I3).
            ctx.events.subscribe_call(&p.pattern, session, options)
        })?;
    t.verb("unsubscribe")
        .help("Cancel a subscription this connection made with subscribe; false if it has none by that id.")
        .typed(|p: Unsubscribe, ctx: CallContext| async move {
            Ok::<_, RpcError>(match &ctx.session {
                Some(session) => ctx.events.unsubscribe(session.conn_id, p.id),
                None => false,
            })
        })?;
    Ok(())
}
