//! Swapping the TLS certificate, key and client CA while serving (SIGHUP in the binary).
//!
//! The whole rustls `ServerConfig` is swapped, not only the certificate: the client-CA
//! verifier lives in it too. Each handshake takes the configuration current when it
//! starts, so established connections keep going on the material they were made with
//! and only new handshakes see the new one. Session resumption state lives in the
//! `ServerConfig` as well, so a client cannot resume into a session of the old
//! certificate after a reload.
//!
//! A std `RwLock` around an `Arc` is enough (no `arc-swap`): it is read once per
//! handshake, which costs far more than an uncontended lock, and written only on reload.

use crate::config::TlsConfig;
use crate::front::tls::load;
use rustls::pki_types::CertificateDer;
use rustls::ServerConfig;
use std::io;
use std::sync::{Arc, PoisonError, RwLock};
use x509_parser::prelude::{FromDer, X509Certificate};

/// The files TLS was configured with and the rustls configuration last loaded from them.
pub(crate) struct Material {
    files: TlsConfig,
    current: RwLock<Arc<ServerConfig>>,
}

impl Material {
    /// Load `files` (a bad file fails here: at startup that stops the server).
    pub fn load(files: &TlsConfig) -> io::Result<Material> {
        let (config, leaf) = load::server_config(files)?;
        tracing::debug!(certificate = %describe(&leaf), "TLS certificate loaded");
        Ok(Material {
            files: files.clone(),
            current: RwLock::new(Arc::new(config)),
        })
    }

    /// The configuration a handshake starting now uses.
    pub fn current(&self) -> Arc<ServerConfig> {
        // A writer cannot panic while holding the lock (it only assigns), but a
        // poisoned lock still holds a whole, valid configuration.
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn reload(&self) -> io::Result<String> {
        let (config, leaf) = load::server_config(&self.files)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
        Ok(describe(&leaf))
    }
}

/// Reloads the server's TLS certificate, key and client CA from the files it was
/// configured with, without a restart. Get one from
/// [`Server::tls_reloader`](crate::Server::tls_reloader) before
/// [`Server::run`](crate::Server::run) (which consumes the server); it is cheap to clone
/// and may be kept in a signal handler or an admin task.
#[derive(Clone)]
pub struct TlsReloader(pub(crate) Arc<Material>);

impl TlsReloader {
    /// Read the certificate, key and client CA files again; new handshakes then use
    /// them, established connections keep what they have. Both outcomes are logged
    /// (the new certificate's subject and serial, or the error naming the file). On
    /// error nothing changes: the material already in use keeps serving.
    pub fn reload(&self) -> io::Result<()> {
        match self.0.reload() {
            Ok(cert) => {
                tracing::info!(certificate = %cert, "TLS material reloaded");
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "TLS reload failed; still serving the previous certificate");
                Err(e)
            }
        }
    }
}

impl std::fmt::Debug for TlsReloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsReloader")
            .field("cert", &self.0.files.cert)
            .field("key", &self.0.files.key)
            .field("client_ca", &self.0.files.client_ca)
            .finish()
    }
}

/// "subject, serial" of a leaf certificate, so the log shows which one is serving.
fn describe(leaf: &CertificateDer<'_>) -> String {
    match X509Certificate::from_der(leaf) {
        Ok((_, cert)) => format!(
            "subject \"{}\", serial {}",
            cert.subject(),
            cert.raw_serial_as_string()
        ),
        Err(_) => "(unparsable certificate)".into(),
    }
}
