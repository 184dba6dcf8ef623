//! What may come in front of the application protocol: a PROXY header, then TLS.
//!
//! Both are found by the same sniffer as the protocols (their probes sit in the same
//! table), and after either the stream is sniffed again. [`Stage`] records how far a
//! connection has come, so that each layer is admitted at most once and in order:
//! PROXY only as the very first bytes and only from a trusted network, TLS only
//! outside TLS and only when configured, plaintext only where the TLS mode allows.

pub(crate) mod proxy;
pub(crate) mod tls;

use crate::config::{Config, TlsMode};
use crate::conn::{ConnInfo, Stage};
use crate::sniff::{Detected, Probes};
use proxy::Trusted;
use std::io;
use tls::Tls;

/// A listener's front-layer settings, built once at bind time.
pub(crate) struct Front {
    tls: Option<Tls>,
    mode: TlsMode,
    trusted: Trusted,
    /// `[unix] proxy`: processes on Unix sockets may send PROXY headers.
    unix_proxy: bool,
}

impl Front {
    /// Load the TLS material (a bad or missing PEM fails here, before any socket is
    /// bound) and the trusted PROXY networks.
    pub fn from_config(config: &Config) -> io::Result<Front> {
        let mode = config.tls.mode();
        let tls = match mode {
            TlsMode::Off => None,
            TlsMode::Optional | TlsMode::Required => Some(Tls::from_config(&config.tls)?),
        };
        if tls.is_some() {
            let mutual = config.tls.client_ca.is_some();
            tracing::info!(?mode, mutual, "TLS on");
        }
        Ok(Front {
            tls,
            mode,
            trusted: Trusted::new(&config.proxy_from),
            unix_proxy: config.unix.proxy,
        })
    }

    /// Is `peer` a trusted PROXY peer (a balancer, whose socket carries many clients)?
    /// Over TCP when `proxy_from` holds its address; on a Unix socket when
    /// `[unix] proxy` is on.
    pub fn trusts(&self, peer: &crate::conn::Peer) -> bool {
        match peer.ip() {
            Some(ip) => self.trusted.contains(ip),
            None => self.unix_proxy,
        }
    }

    pub fn tls(&self) -> Option<&Tls> {
        self.tls.as_ref()
    }

    /// Put the PROXY probe first (a v1 header looks like an HTTP request line) and
    /// the TLS probe after the protocols' (no protocol starts with 0x16). Both are
    /// always there, so a ClientHello to a plaintext listener or a PROXY header from
    /// a stranger is named in the log rather than called an unknown protocol.
    pub fn probes(probes: Probes) -> Probes {
        probes
            .with_first(Detected::ProxyHeader, proxy::probe)
            .with(Detected::Tls, tls::probe)
    }

    /// Whether `detected` may run on this connection at its stage; `Err` says why not.
    pub fn admit(&self, detected: Detected, info: &ConnInfo) -> Result<(), Refused> {
        let refused = match detected {
            Detected::ProxyHeader if info.stage != Stage::Start => Refused::ProxyNotFirst,
            Detected::ProxyHeader if !self.trusts(&info.peer) => Refused::ProxyUntrusted,
            Detected::ProxyHeader => return Ok(()),
            Detected::Tls if info.stage == Stage::Tls => Refused::TlsInTls,
            Detected::Tls if self.tls.is_none() => Refused::TlsOff,
            Detected::Tls => return Ok(()),
            _ if self.mode == TlsMode::Required && info.stage != Stage::Tls => {
                Refused::PlaintextWhenRequired
            }
            _ => return Ok(()),
        };
        Err(refused)
    }
}

/// Why a front layer (or plaintext) was refused on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    ProxyNotFirst,
    ProxyUntrusted,
    TlsInTls,
    TlsOff,
    PlaintextWhenRequired,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::ProxyNotFirst => "PROXY header after the start of the connection",
            Refused::ProxyUntrusted => {
                "PROXY header from an untrusted source (not in proxy_from; on a Unix socket, [unix] proxy is off)"
            }
            Refused::TlsInTls => "TLS inside TLS",
            Refused::TlsOff => "TLS ClientHello but TLS is off",
            Refused::PlaintextWhenRequired => "plaintext refused: TLS is required",
        })
    }
}
