//! Who a connection is and how far it has come.

use std::net::SocketAddr;
use std::sync::Arc;

/// Facts about a connection that framers pass on to verbs.
#[derive(Clone, Debug)]
pub(crate) struct ConnInfo {
    pub id: u64,
    pub peer: SocketAddr,
    pub peer_identity: Option<Arc<str>>,
    /// Which front layers (PROXY header, TLS) are behind us.
    pub stage: Stage,
    /// A correlation id the request carried (HTTP `X-Request-Id` or `FlowID`).
    pub flow_id: Option<String>,
    /// Who is calling, when authentication is on (set once the front layers are
    /// behind; per request on HTTP).
    pub caller: Option<Arc<crate::conn::Caller>>,
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
