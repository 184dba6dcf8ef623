//! The client-side TLS flags shared by `rpcmux call` and `rpcmux bench`.

use clap::Args;
use rpcmux::client::TlsOpts;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TlsArgs {
    /// Speak TLS, verifying the server against the CA certificate(s) in this PEM file.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS; needs --tls-key and --tls-ca.
    #[arg(long, value_name = "FILE", requires = "tls_key", requires = "tls_ca")]
    tls_cert: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Name the server's certificate must carry (default: the host in ADDR).
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    tls_server_name: Option<String>,
}

impl TlsArgs {
    /// `None` when no TLS flag was given: plaintext.
    pub fn opts(&self) -> Option<TlsOpts> {
        let ca = self.tls_ca.clone()?;
        Some(TlsOpts {
            ca,
            client_cert: self.tls_cert.clone().zip(self.tls_key.clone()),
            server_name: self.tls_server_name.clone(),
        })
    }
}
