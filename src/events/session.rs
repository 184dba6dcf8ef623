//! A connection that can receive events, as the hub sees it.

use crate::conn::Caller;
use crate::events::conn_subs::ConnSubs;
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
    /// The count of subscriptions of the connection this session rides on (shared by
    /// the WebSocket sessions of one HTTP/2 connection) and of its client address.
    conn: Arc<ConnSubs>,
}

impl Session {
    /// A session counting its subscriptions on its own (a hub used alone, in tests).
    #[cfg(test)]
    pub(crate) fn new(
        conn_id: u64,
        outbox: Outbox,
        kill: CancellationToken,
        caller: Option<Arc<Caller>>,
    ) -> Self {
        Self::on_connection(conn_id, outbox, kill, caller, ConnSubs::unbounded())
    }

    /// A session whose subscriptions also count against `conn`, its connection's and
    /// its client address's caps ([`ConnSubs`]).
    pub(crate) fn on_connection(
        conn_id: u64,
        outbox: Outbox,
        kill: CancellationToken,
        caller: Option<Arc<Caller>>,
        conn: Arc<ConnSubs>,
    ) -> Self {
        Session {
            conn_id,
            link: Arc::new(SessionLink {
                outbox,
                kill,
                caller,
                conn,
            }),
        }
    }

    /// Count one subscription more against the connection's and the address's caps
    /// (-32002 naming the cap past either).
    pub(crate) fn take_sub(&self) -> Result<(), rpcmux_value::RpcError> {
        self.link.conn.take()
    }

    /// Give back `n` subscriptions that left the hub.
    pub(crate) fn give_subs(&self, n: usize) {
        self.link.conn.give(n);
    }

    /// May this connection's caller see the event named `name`? (Always, without
    /// authentication.)
    pub(crate) fn sees(&self, name: &str) -> bool {
        self.link.caller.as_ref().is_none_or(|c| c.sees(name))
    }
}
