//! TLS on the shared port (rustls, aws-lc-rs provider).
//!
//! A connection whose first byte is 0x16 (a TLS handshake record) gets a rustls
//! handshake with its own deadline; the decrypted stream is then sniffed again from
//! scratch, so every protocol the listener speaks in plaintext it also speaks inside
//! TLS. With a client CA configured, the handshake requires a client certificate that
//! chains to it, and the verified name ([`identity`]) becomes `peer_identity`.
//! The certificate, key and client CA can be reloaded while serving ([`reload`]).

mod identity;
mod load;
mod reload;
pub use reload::TlsReloader;

use crate::config::TlsConfig;
use crate::conn::refusals::{Refusal, Refusals};
use crate::conn::ConnInfo;
use crate::conn::Stage;
use crate::io::{Rewind, Stream};
use prometheus_client::metrics::counter::Counter;
/// Sniffer probe: a TLS ClientHello (rpcmux-sniff's).
pub use rpcmux_sniff::tls as probe;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// A listener's TLS side: the (reloadable) material and the handshake deadline.
pub(crate) struct Tls {
    material: Arc<reload::Material>,
    handshake_timeout: Duration,
}

impl Tls {
    /// Load the certificate, key and client CA named in `cfg`.
    pub fn from_config(cfg: &TlsConfig) -> io::Result<Tls> {
        Ok(Tls {
            material: Arc::new(reload::Material::load(cfg)?),
            handshake_timeout: cfg.handshake_timeout(),
        })
    }

    /// A handle that reloads this listener's material from its files.
    pub fn reloader(&self) -> TlsReloader {
        TlsReloader(self.material.clone())
    }
}

/// Run the handshake on `io` (its sniffed bytes replayed first) and return the
/// decrypted stream, with the verified client identity put in `info`. A failed or late
/// handshake is counted and logged, and gives `None` (close). The caller holds a
/// sniffing slot meanwhile: a handshake is as cheap for a client to stall as first bytes.
pub(crate) async fn handshake<S: Stream>(
    io: Rewind<S>,
    info: &mut ConnInfo,
    tls: &Tls,
    shutdown: &CancellationToken,
    refusals: &Refusals,
    failed: Option<&Counter>,
) -> Option<tokio_rustls::server::TlsStream<Rewind<S>>> {
    let deadline = tls.handshake_timeout;
    // The material current now: a reload during the handshake does not change it.
    let acceptor = TlsAcceptor::from(tls.material.current());
    let done = tokio::select! {
        _ = shutdown.cancelled() => return None,
        r = tokio::time::timeout(deadline, acceptor.accept(io)) => r,
    };
    if !matches!(done, Ok(Ok(_))) {
        if let Some(failed) = failed {
            failed.inc();
        }
    }
    let stream = match done {
        Err(_) => {
            let detail = format!("TLS handshake deadline passed ({deadline:?})");
            refusals.refuse(Refusal::SniffTimeout, info.peer, &detail);
            return None;
        }
        Ok(Err(e)) => {
            let detail = format!("TLS handshake failed: {e}");
            refusals.refuse(Refusal::Front, info.peer, &detail);
            return None;
        }
        Ok(Ok(s)) => s,
    };
    let session = stream.get_ref().1;
    info.peer_identity = session
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|leaf| identity::of(leaf));
    info.stage = Stage::Tls;
    tracing::debug!(
        peer = %info.peer,
        conn = info.id,
        identity = info.peer_identity.as_deref(),
        version = ?session.protocol_version(),
        alpn = session.alpn_protocol().map(String::from_utf8_lossy).as_deref(),
        "TLS established"
    );
    Some(stream)
}
