//! Who a connection is and how far it has come.

use crate::conn::Peer;
use std::sync::Arc;

/// Facts about a connection that framers pass on to verbs.
#[derive(Clone, Debug)]
pub(crate) struct ConnInfo {
    pub id: u64,
    pub peer: Peer,
    pub peer_identity: Option<Arc<str>>,
    /// Which front layers (PROXY header, TLS) are behind us.
    pub stage: Stage,
    /// A correlation id the request carried (HTTP `X-Request-Id` or `FlowID`).
    pub flow_id: Option<String>,
    /// Who is calling, when authentication is on (set once the front layers are
    /// behind; per request on HTTP).
    pub caller: Option<Arc<crate::conn::Caller>>,
    /// Served as HTTP/2: calls name their protocol `*-h2` (metrics, access log).
    pub http2: bool,
}

impl ConnInfo {
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
