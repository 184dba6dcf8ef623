//! A connection that can receive events, as the hub sees it.

use crate::conn::Caller;
use crate::events::conn_subs::ConnSubs;
use crate::events::options::Options;
use crate::events::outbox::Outbox;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    /// Subscriptions with `since` answered but not yet made: they are made (and their
    /// retained events queued) once the reply to `subscribe` is written, so a client
    /// learns its subscription's id before the first of its events (jsonrpsee drops
    /// notifications for an id it does not know yet).
    pending: Mutex<Vec<Pending>>,
    has_pending: AtomicBool,
    /// The count of subscriptions of the connection this session rides on (shared by
    /// the WebSocket sessions of one HTTP/2 connection) and of its client address.
    conn: Arc<ConnSubs>,
}

/// Answered subscriptions never made (the session ended first) give their count back.
impl Drop for SessionLink {
    fn drop(&mut self) {
        let pending = self.pending.get_mut().unwrap_or_else(|e| e.into_inner());
        self.conn.give(pending.len());
    }
}

/// A subscription answered and still to be made (see `SessionLink::pending`).
#[derive(Debug)]
pub(crate) struct Pending {
    pub id: u64,
    pub pattern: String,
    pub options: Options,
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
                pending: Mutex::default(),
                has_pending: AtomicBool::new(false),
                conn,
            }),
        }
    }

    /// Make subscription `pending` once the reply that announces it is written.
    pub(crate) fn defer(&self, pending: Pending) {
        let mut p = self.link.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.push(pending);
        self.link.has_pending.store(true, Ordering::Release);
    }

    /// Subscriptions answered and not made yet.
    pub(crate) fn pending_len(&self) -> usize {
        self.link
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// The subscriptions answered since the last call (cheap when there are none).
    pub(crate) fn take_pending(&self) -> Vec<Pending> {
        // Read before the swap: the driver asks on every turn of its loop, and a plain
        // load costs nothing where a swap is a locked instruction each time.
        if !self.link.has_pending.load(Ordering::Relaxed)
            || !self.link.has_pending.swap(false, Ordering::Acquire)
        {
            return Vec::new();
        }
        std::mem::take(&mut *self.link.pending.lock().unwrap_or_else(|e| e.into_inner()))
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
