//! `[tls]`: TLS on the shared port (docs/tls.md).

use crate::config::limits::{seconds, timeout};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// What a listener does with TLS and plaintext clients (both are told apart by the
/// first byte, so one port serves both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// Plaintext only: a TLS ClientHello is closed and logged.
    Off,
    /// TLS and plaintext side by side.
    Optional,
    /// TLS only: a plaintext connection is closed and logged.
    Required,
}

/// TLS settings. With `client_ca` set every TLS client must present a certificate
/// that chains to it (mutual TLS); plaintext clients, where `mode` lets them in,
/// have no identity.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain, leaf first.
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// PEM CA certificate(s) that client certificates must chain to.
    pub client_ca: Option<PathBuf>,
    /// Unset: `optional` when a certificate is given, else `off`.
    pub mode: Option<TlsMode>,
    /// Seconds a TLS handshake may take; separate from the sniff deadline, since a
    /// handshake costs round trips and CPU the first bytes do not.
    #[serde(deserialize_with = "seconds")]
    pub handshake_timeout: f64,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            cert: None,
            key: None,
            client_ca: None,
            mode: None,
            handshake_timeout: 10.0,
        }
    }
}

impl TlsConfig {
    /// The mode in force: as set, else `optional` when a certificate is given.
    pub fn mode(&self) -> TlsMode {
        match (self.mode, &self.cert) {
            (Some(m), _) => m,
            (None, Some(_)) => TlsMode::Optional,
            (None, None) => TlsMode::Off,
        }
    }
    /// The `handshake_timeout` field as a `Duration` (0: none).
    pub fn handshake_timeout(&self) -> Duration {
        timeout(self.handshake_timeout)
    }
}
