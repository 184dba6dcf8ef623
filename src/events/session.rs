//! A connection that can receive events, as the hub sees it.

use crate::events::Event;
use std::sync::Arc;
use tokio::sync::mpsc;
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
    pub outbox: mpsc::Sender<Arc<Event>>,
    pub kill: CancellationToken,
}

impl Session {
    pub(crate) fn new(
        conn_id: u64,
        outbox: mpsc::Sender<Arc<Event>>,
        kill: CancellationToken,
    ) -> Self {
        Session {
            conn_id,
            link: Arc::new(SessionLink { outbox, kill }),
        }
    }
}
