//! One connection: sniff, then hand the stream to its protocol's framer.

use super::Shared;
use crate::io::{Rewind, Stream};
use crate::sniff::{self, Decision, Detected};
use crate::transport;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Facts about a connection that framers pass on to verbs.
#[derive(Clone, Debug)]
pub(crate) struct ConnInfo {
    pub id: u64,
    pub peer: SocketAddr,
    pub peer_identity: Option<Arc<str>>,
    /// Which front layers (PROXY header, TLS) are behind us.
    pub stage: crate::front::Stage,
}

pub(crate) async fn handle(stream: TcpStream, peer: SocketAddr, id: u64, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let info = ConnInfo {
        id,
        peer,
        peer_identity: None,
        stage: crate::front::Stage::Start,
    };
    serve_stream(stream, info, shared).await;
}

/// Sniff `io` and run the framer it asks for.
pub(crate) async fn serve_stream<S: Stream>(mut io: S, info: ConnInfo, shared: Arc<Shared>) {
    let Ok(_sniffing) = shared.sniffing.clone().try_acquire_owned() else {
        tracing::warn!(peer = %info.peer, "too many connections still sniffing; closing");
        return;
    };
    let mut buf = BytesMut::with_capacity(1024);
    let deadline = shared.config.limits.sniff_timeout();
    let decision = tokio::select! {
        _ = shared.shutdown.cancelled() => return,
        r = tokio::time::timeout(deadline, sniff::sniff(&mut io, &shared.probes, &mut buf, sniff::MAX_SNIFF)) => r,
    };
    drop(_sniffing);
    let detected = match decision {
        Err(_) => {
            tracing::info!(peer = %info.peer, bytes = buf.len(), ?deadline, "sniff deadline passed; closing");
            return;
        }
        Ok(Err(e)) => {
            tracing::debug!(peer = %info.peer, error = %e, "connection closed while sniffing");
            return;
        }
        Ok(Ok(Decision::Found(d))) => d,
        Ok(Ok(_)) => {
            let head = String::from_utf8_lossy(&buf[..buf.len().min(32)]).into_owned();
            tracing::warn!(peer = %info.peer, ?head, "unknown protocol; closing");
            let _ = io.shutdown().await;
            return;
        }
    };
    tracing::debug!(peer = %info.peer, conn = info.id, ?detected, "protocol detected");
    if !shared.front.admit(detected, &info) {
        return;
    }
    let io = Rewind::new(buf.freeze(), io);
    match detected {
        Detected::ProxyHeader => crate::proxy::serve(io, info, shared).await,
        Detected::Tls => crate::tls::serve(io, info, shared).await,
        Detected::Http => transport::http::serve(io, info, shared).await,
        Detected::JsonTcp => transport::json_tcp::serve(io, info, shared).await,
        Detected::Msgpack => transport::msgpack::serve(io, info, shared).await,
        Detected::Stomp => transport::stomp::serve(io, info, shared).await,
    }
}

impl ConnInfo {
    /// The per-call context for calls arriving on this connection.
    pub fn call_context(&self, protocol: &'static str, shared: &Shared) -> crate::CallContext {
        let mut ctx = crate::CallContext::new(protocol, shared.events.clone());
        ctx.peer = Some(self.peer);
        ctx.peer_identity = self.peer_identity.clone();
        ctx
    }
}
