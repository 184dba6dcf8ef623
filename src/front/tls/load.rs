//! Build the rustls server configuration from the PEM files named in [`TlsConfig`].
//! Every failure names the file and what was wrong with it, because it surfaces as
//! `rpcmux serve` refusing to start.

use crate::config::TlsConfig;
use rustls::crypto::{aws_lc_rs, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// The ALPN protocols offered, preferred first: HTTP/2, then HTTP/1.1 (the HTTP framer
/// tells them apart by the HTTP/2 preface). Clients of the raw-stream protocols send no
/// ALPN at all (then none is negotiated).
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The rustls configuration for `cfg`, which must name a certificate and a key, and the
/// leaf certificate it serves (for the log).
pub fn server_config(cfg: &TlsConfig) -> io::Result<(ServerConfig, CertificateDer<'static>)> {
    let (Some(cert_path), Some(key_path)) = (&cfg.cert, &cfg.key) else {
        return Err(bad(
            "TLS needs both a certificate (--tls-cert) and a key (--tls-key)",
        ));
    };
    let chain = certs(cert_path)?;
    let leaf = chain[0].clone();
    let key = PrivateKeyDer::from_pem_slice(&read_pem(key_path, "key")?)
        .map_err(|e| bad(format!("TLS key {}: {e}", key_path.display())))?;
    // Named here, not installed process-wide: no default provider to install or race on.
    let provider = Arc::new(aws_lc_rs::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("TLS: {e}")))?;
    let builder = match &cfg.client_ca {
        Some(ca) => builder.with_client_cert_verifier(client_verifier(ca, provider)?),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        bad(format!(
            "TLS certificate {} with key {}: {e}",
            cert_path.display(),
            key_path.display()
        ))
    })?;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok((config, leaf))
}

/// Client certificates must chain to one of the CAs in `path`; a client without a
/// certificate fails the handshake (a verifier built without `allow_unauthenticated`).
fn client_verifier(
    path: &Path,
    provider: Arc<CryptoProvider>,
) -> io::Result<Arc<dyn rustls::server::danger::ClientCertVerifier>> {
    let mut roots = RootCertStore::empty();
    for ca in certs(path)? {
        roots
            .add(ca)
            .map_err(|e| bad(format!("TLS client CA {}: {e}", path.display())))?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| bad(format!("TLS client CA {}: {e}", path.display())))
}

/// The most a PEM file may hold: a certificate chain with its CAs is a few KiB, a CA
/// bundle a few hundred. A path that is `/dev/zero` grew the process to 1.2 GiB.
pub const MAX_PEM: u64 = 1 << 20;

/// The bytes of a PEM file: a regular file of at most [`MAX_PEM`] bytes. Anything else
/// (a FIFO that stalls the reader, a device, a huge file) is refused, naming the path.
fn read_pem(path: &Path, what: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let named = |e: &dyn std::fmt::Display| bad(format!("TLS {what} {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| named(&e))?;
    if !meta.is_file() {
        return Err(named(&"not a regular file"));
    }
    // O_NONBLOCK: if the path is swapped for a FIFO after the check, opening it does
    // not wait for a writer.
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_NONBLOCK);
    }
    let file = open.open(path).map_err(|e| named(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| named(&e))?;
    if bytes.len() as u64 > MAX_PEM {
        return Err(named(&format!("larger than {MAX_PEM} bytes")));
    }
    Ok(bytes)
}

/// Every CERTIFICATE block in `path`; none at all is an error.
fn certs(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let what = |e: &dyn std::fmt::Display| bad(format!("TLS certificate {}: {e}", path.display()));
    let pem = read_pem(path, "certificate")?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| what(&e))?;
    if certs.is_empty() {
        return Err(what(&"no CERTIFICATE block in it"));
    }
    Ok(certs)
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}
