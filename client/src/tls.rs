//! TLS under any protocol (rustls, aws-lc-rs, as the server): the server is verified against
//! a CA file (no system roots: rpcmux deployments use their own CA, as VDSM's do), and
//! a client certificate can be presented for mutual TLS.

use crate::error::ClientError;
use crate::opts::{ClientProto, Io, TlsOpts};
use rustls::crypto::aws_lc_rs;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::sync::Arc;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

fn bad(what: &str, e: impl std::fmt::Display) -> ClientError {
    ClientError::Connect(format!("TLS {what}: {e}"))
}

/// The rustls client configuration for `opts` (built per connection: cheap next to a
/// handshake, and it keeps the options plain data).
fn config(opts: &TlsOpts, proto: ClientProto) -> Result<ClientConfig, ClientError> {
    let ca = &opts.ca.display().to_string();
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&opts.ca).map_err(|e| bad(ca, e))? {
        roots
            .add(cert.map_err(|e| bad(ca, e))?)
            .map_err(|e| bad(ca, e))?;
    }
    if roots.is_empty() {
        return Err(bad(ca, "no CA certificate in it"));
    }
    let builder = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("setup", e))?
        .with_root_certificates(roots);
    let mut config = match &opts.client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let what = cert.display().to_string();
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(|e| bad(&what, e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(&what, e))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| bad(&key.display().to_string(), e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad(&what, e))?
        }
    };
    if !proto.pipelines() || ClientProto::WEBSOCKET.contains(&proto) {
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
    }
    Ok(config)
}

/// Run the TLS handshake over `io` (a TCP or Unix-domain stream) as [`Client::connect`](crate::Client::connect)
/// does (the ALPN `proto` needs), for a caller that dials itself (its own connect
/// deadline) and then starts the protocol with [`Client::over`](crate::Client::over).
/// `host` is the address's host part: the name the server's certificate must carry
/// unless `opts.server_name` says otherwise.
pub async fn handshake<S: Io>(
    io: S,
    host: &str,
    opts: &TlsOpts,
    proto: ClientProto,
) -> Result<TlsStream<S>, ClientError> {
    let connector = TlsConnector::from(Arc::new(config(opts, proto)?));
    let name = opts.server_name.as_deref().unwrap_or(host);
    // `[::1]` in an address is `::1` in a certificate.
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(name.to_string()).map_err(|e| bad("server name", e))?;
    connector
        .connect(name, io)
        .await
        .map_err(|e| bad("handshake", e))
}
