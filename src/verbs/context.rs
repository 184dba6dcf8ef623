//! What a verb knows about the call it serves.

use crate::events::{EventHub, Session};
use std::net::SocketAddr;
use std::sync::Arc;

/// Per-call facts, cheap to clone.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The protocol the call came in by ("jsonrpc-http", "jsonrpc-tcp", ...).
    pub protocol: &'static str,
    /// The client: the socket peer, or the address a trusted PROXY header gave; `None`
    /// over a Unix-domain socket (see `peer_cred`).
    pub peer: Option<SocketAddr>,
    /// Over a Unix-domain socket, the connecting process's uid, gid and pid as the
    /// kernel recorded them (`SO_PEERCRED`).
    pub peer_cred: Option<crate::conn::PeerCred>,
    /// A correlation id when the transport carries one (STOMP `ovirtCorrelationId`).
    pub flow_id: Option<String>,
    /// The verified TLS client identity (certificate subject), when mutual TLS is on.
    pub peer_identity: Option<Arc<str>>,
    /// Set on connections that can receive events.
    pub(crate) session: Option<Session>,
    /// The server's events hub: publish here, and subscribed connections receive.
    pub events: Arc<EventHub>,
    /// Fires when the server gives up on calls still running at its shutdown deadline.
    pub(crate) abort: Option<Arc<Abort>>,
    /// Who is calling and the policy they are checked against (`--auth`); `None`:
    /// authentication is off and every verb may be called.
    pub(crate) caller: Option<Arc<crate::conn::Caller>>,
}

/// The server's "cancel every call" switch, cheap to check per call: a call that is
/// still pending waits on it beside its own work; one that finishes at once never
/// touches it.
#[derive(Debug, Default)]
pub(crate) struct Abort {
    fired: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Abort {
    pub fn fire(&self) {
        self.fired.store(true, std::sync::atomic::Ordering::Release);
        self.notify.notify_waiters();
    }

    pub async fn fired(&self) {
        loop {
            let notified = self.notify.notified();
            if self.fired.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

impl CallContext {
    /// Whether the call came on a connection that can receive events (raw-TCP
    /// JSON-RPC, msgpack-rpc, STOMP, WebSocket): a `subscribe` there is delivered.
    pub fn receives_events(&self) -> bool {
        self.session.is_some()
    }

    /// Who is calling: the principal authentication proved (a user of the credentials
    /// file, a token's `sub`, a certificate's name), or with authentication off the
    /// verified TLS client name. `None`: an anonymous caller.
    pub fn principal(&self) -> Option<Arc<str>> {
        match &self.caller {
            Some(c) => c.principal().map(|p| p.name_arc().clone()),
            None => self.peer_identity.clone(),
        }
    }

    /// The address failed logins are throttled by: the client's, one per local user
    /// over a Unix socket, or the unspecified address for a call that came with
    /// neither (an embedder's own transport).
    pub(crate) fn source_ip(&self) -> std::net::IpAddr {
        self.client()
            .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |p| {
                p.throttle_ip()
            })
    }

    /// The other end of the call's connection: the TCP client, or the Unix socket's
    /// process; `None` for a call that came with neither.
    pub(crate) fn client(&self) -> Option<crate::conn::Peer> {
        use crate::conn::Peer;
        self.peer.map(Peer::Tcp).or(self.peer_cred.map(Peer::Unix))
    }

    /// A context for calling a table directly (tests, embedders' own transports):
    /// no peer, no session.
    pub fn new(protocol: &'static str, events: Arc<EventHub>) -> Self {
        CallContext {
            protocol,
            peer: None,
            peer_cred: None,
            flow_id: None,
            peer_identity: None,
            session: None,
            events,
            abort: None,
            caller: None,
        }
    }
}
