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
}

#[derive(Deserialize, JsonSchema)]
struct Unsubscribe {
    /// The id `subscribe` returned on this connection.
    id: u64,
}

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("subscribe")
        .help("Receive server events whose name starts with pattern ('*' for all) on this connection, as notifications. Returns a subscription id, valid on this connection only. Only on connections that can carry notifications (raw-TCP JSON-RPC, msgpack-rpc, STOMP, WebSocket). With since (an event_id received before, or \"0\"), the retained events after it come first, then live ones, and notifications carry event_id; a since older than what is retained is error -32007 naming the oldest retained id.")
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
            let resumable = p.resumable.unwrap_or(since.is_some());
            ctx.events
                .subscribe_since(&p.pattern, session, since, resumable)
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
