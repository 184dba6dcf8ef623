//! Who a connection is and how far it has come.

use crate::conn::Peer;
use rpcmux_auth::Principal;
use std::sync::Arc;

/// Facts about a connection (or one session or request on it) that framers pass on to
/// verbs. Nothing in it changes once a framer has it: who a session has become by
/// `rpc.login` lives in that session's own caller, made from [`ConnInfo::principal`] by
/// [`crate::shared::Shared::call_context`], never here, where every stream of an
/// HTTP/2 connection would share it.
#[derive(Clone, Debug)]
pub(crate) struct ConnInfo {
    /// The connection's number, unique in this process.
    pub id: u64,
    /// The number events are addressed to: the connection's own for a connection that
    /// is one session, a fresh one for each session on a connection that carries many
    /// (a WebSocket on an HTTP/2 stream: [`ConnInfo::stream_session`]).
    pub session: u64,
    pub peer: Peer,
    pub peer_identity: Option<Arc<str>>,
    /// Which front layers (PROXY header, TLS) are behind us.
    pub stage: Stage,
    /// A correlation id the request carried (HTTP `X-Request-Id` or `FlowID`).
    pub flow_id: Option<String>,
    /// What the transport proved (`--auth`): a verified certificate (here or at a
    /// trusted proxy) or a Unix socket's uid, set once the front layers are behind;
    /// for one HTTP request or WebSocket handshake, the principal its `Authorization`
    /// proved. `None`: anonymous until a session logs in.
    pub principal: Option<Principal>,
    /// Served as HTTP/2: calls name their protocol `*-h2` (metrics, access log).
    pub http2: bool,
    /// The subscription count shared by the sessions of a connection that carries
    /// many (HTTP/2); `None`: each session's connection counts its own.
    pub subs: Option<Arc<crate::events::conn_subs::ConnSubs>>,
}

impl ConnInfo {
    /// A connection just accepted: one session, anonymous so far.
    pub fn new(id: u64, peer: Peer) -> ConnInfo {
        ConnInfo {
            id,
            session: id,
            peer,
            peer_identity: None,
            stage: Stage::Start,
            flow_id: None,
            principal: None,
            http2: false,
            subs: None,
        }
    }

    /// One session of many on this connection (a WebSocket on an HTTP/2 stream): its
    /// own event session number `session` (from the connection counter, so it is
    /// never another connection's or session's), and `proved`, the principal its
    /// handshake's `Authorization` proved, else the connection's.
    pub fn stream_session(&self, session: u64, proved: Option<Principal>) -> ConnInfo {
        ConnInfo {
            session,
            principal: proved.or_else(|| self.principal.clone()),
            ..self.clone()
        }
    }

    /// This connection's facts for one request whose `Authorization` proved `proved`
    /// (`None`: the connection's own principal stands).
    pub fn proved(&self, proved: Option<Principal>) -> std::borrow::Cow<'_, ConnInfo> {
        match proved {
            None => std::borrow::Cow::Borrowed(self),
            Some(p) => std::borrow::Cow::Owned(ConnInfo {
                principal: Some(p),
                ..self.clone()
            }),
        }
    }

    /// `http1` for a call over HTTP/1.x, `h2` over HTTP/2: the protocol a call over
    /// HTTP names in metrics and the access log.
    pub fn http_protocol(&self, http1: &'static str, h2: &'static str) -> &'static str {
        if self.http2 {
            h2
        } else {
            http1
        }
    }
}

/// How far a connection has come through the front layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Nothing read yet: a PROXY header or TLS may come.
    Start,
    /// After a trusted PROXY header: TLS may come.
    Proxied,
    /// Inside TLS.
    Tls,
}
