//! A connection that can receive events, as the hub sees it.

use crate::conn::Caller;
use crate::events::outbox::Outbox;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A bidirectional connection (raw-TCP JSON-RPC, msgpack-rpc, STOMP) that can
/// receive server events: its bounded outbox and the token that drops it.
#[derive(Clone, Debug)]
pub struct Session {
    /// The connection's number, unique in this process.
    pub conn_id: u64,
    /// Shared by every call's copy: a `CallContext` is cloned per call, and cloning the
    /// sender and the token themselves costs atomics and a mutex each.
    pub(crate) link: Arc<SessionLink>,
}

/// A session's outbox and the token that drops it.
#[derive(Debug)]
pub(crate) struct SessionLink {
    pub outbox: Outbox,
    pub kill: CancellationToken,
    /// Who is listening (`--auth`): an event reaches it only if its principal may see
    /// the event's name, whatever its subscriptions match.
    pub caller: Option<Arc<Caller>>,
}

impl Session {
    pub(crate) fn new(
        conn_id: u64,
        outbox: Outbox,
        kill: CancellationToken,
        caller: Option<Arc<Caller>>,
    ) -> Self {
        Session {
            conn_id,
            link: Arc::new(SessionLink {
                outbox,
                kill,
                caller,
            }),
        }
    }

    /// May this connection's caller see the event named `name`? (Always, without
    /// authentication.)
    pub(crate) fn sees(&self, name: &str) -> bool {
        self.link.caller.as_ref().is_none_or(|c| c.sees(name))
    }
}
