//! TLS material reloaded on SIGHUP, end to end: the real binary, certificates made here
//! with rcgen (each with its own subject and serial, so a handshake shows which one the
//! server presented), and a rustls client speaking JSON-RPC over TLS.

use crate::common::*;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use x509_parser::prelude::{FromDer, X509Certificate};

/// A test CA: its PEM and what signs with it.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(cn: &str) -> Ca {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().unwrap();
    let pem = p.self_signed(&key).unwrap().pem();
    Ca {
        pem,
        issuer: Issuer::new(p, key),
    }
}

/// A leaf certificate and its key (PEM) signed by `ca`: a server certificate for
/// 127.0.0.1 with `serial`, or a client certificate.
fn leaf(ca: &Ca, cn: &str, serial: u64, server: bool) -> (String, String) {
    let mut p = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.serial_number = Some(SerialNumber::from(serial));
    p.extended_key_usages = vec![if server {
        ExtendedKeyUsagePurpose::ServerAuth
    } else {
        ExtendedKeyUsagePurpose::ClientAuth
    }];
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A directory of PEM files the server reads; removed on drop.
struct Files(PathBuf);

impl Files {
    fn new(tag: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("rpcmux-reload-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Files(dir)
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }
    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).unwrap();
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TLS connection to the server, with what the handshake showed of its certificate.
struct Tls {
    stream: StreamOwned<ClientConnection, TcpStream>,
    /// (subject CN, serial) of the certificate the server presented.
    cert: (String, u64),
}

/// Handshake with `addr` trusting `roots`, presenting `client` (cert, key PEM) if given.
fn tls(addr: SocketAddr, roots: &[&str], client: Option<&(String, String)>) -> Tls {
    try_tls(addr, roots, client).expect("TLS handshake")
}

fn try_tls(
    addr: SocketAddr,
    roots: &[&str],
    client: Option<&(String, String)>,
) -> Result<Tls, String> {
    let mut store = RootCertStore::empty();
    for pem in roots {
        store
            .add(CertificateDer::from_pem_slice(pem.as_bytes()).unwrap())
            .unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
    };
    let name = ServerName::IpAddress(addr.ip().into());
    let mut conn = ClientConnection::new(Arc::new(config), name).unwrap();
    let mut tcp = connect(addr);
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(|e| e.to_string())?;
    }
    let leaf = &conn.peer_certificates().expect("server certificate")[0];
    let (_, x509) = X509Certificate::from_der(leaf).unwrap();
    let cn = x509
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    let serial = x509
        .raw_serial()
        .iter()
        .fold(0u64, |n, b| n << 8 | u64::from(*b));
    Ok(Tls {
        stream: StreamOwned::new(conn, tcp),
        cert: (cn, serial),
    })
}

impl Tls {
    /// One JSON-RPC call over raw TCP inside TLS: its `result`, or why there was none.
    fn call(&mut self, method: &str) -> Result<serde_json::Value, String> {
        let req = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"id\":1}}\n");
        self.stream
            .write_all(req.as_bytes())
            .map_err(|e| e.to_string())?;
        self.stream.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        match BufReader::new(&mut self.stream).read_line(&mut line) {
            Ok(n) if n > 0 => Ok(json(line.as_bytes())["result"].clone()),
            Ok(_) => Err("closed".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn serve(files: &Files, client_ca: bool) -> Server {
    let (cert, key, ca) = (
        files.path("server.pem"),
        files.path("server.key"),
        files.path("client-ca.pem"),
    );
    let mut args = vec![
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
        "--tls",
        "required",
    ];
    if client_ca {
        args.extend(["--tls-client-ca", ca.as_str()]);
    }
    Server::start(&args)
}

#[test]
fn sighup_serves_new_certificate_and_client_ca_to_new_handshakes_only() {
    let (ca1, ca2) = (ca("reload CA one"), ca("reload CA two"));
    let files = Files::new("swap");
    let (cert1, key1) = leaf(&ca1, "server one", 1001, true);
    files.write("server.pem", &cert1);
    files.write("server.key", &key1);
    files.write("client-ca.pem", &ca1.pem);
    let client1 = leaf(&ca1, "client of one", 1, false);
    let client2 = leaf(&ca2, "client of two", 2, false);
    let roots = [ca1.pem.as_str(), ca2.pem.as_str()];
    let srv = serve(&files, true);

    let mut before = tls(srv.addr, &roots, Some(&client1));
    assert_eq!(before.cert, ("server one".to_string(), 1001));
    assert_eq!(before.call("whoami").unwrap()["identity"], "client of one");

    let (cert2, key2) = leaf(&ca2, "server two", 2002, true);
    files.write("server.pem", &cert2);
    files.write("server.key", &key2);
    files.write("client-ca.pem", &ca2.pem);
    srv.sighup();
    srv.wait_count("TLS material reloaded", 1, Duration::from_secs(10));
    assert!(srv.log().contains("server two"), "{}", srv.log());

    let mut after = tls(srv.addr, &roots, Some(&client2));
    assert_eq!(after.cert, ("server two".to_string(), 2002));
    assert_eq!(after.call("whoami").unwrap()["identity"], "client of two");
    // The old client CA is no longer trusted: the server refuses the client certificate
    // (under TLS 1.3 the client learns it on its first read).
    if let Ok(mut old_client) = try_tls(srv.addr, &roots, Some(&client1)) {
        assert!(old_client.call("ping").is_err(), "CA one still trusted");
    }
    srv.wait_count("TLS handshake failed", 1, Duration::from_secs(10));

    // The connection made before the reload goes on, on the old certificate.
    assert_eq!(before.call("ping").unwrap(), true);
    assert_eq!(before.call("whoami").unwrap()["identity"], "client of one");
}

#[test]
fn a_bad_new_certificate_is_logged_and_the_old_one_keeps_serving() {
    let ca1 = ca("reload CA");
    let files = Files::new("bad");
    let (cert1, key1) = leaf(&ca1, "server one", 1001, true);
    files.write("server.pem", &cert1);
    files.write("server.key", &key1);
    let srv = serve(&files, false);
    let roots = [ca1.pem.as_str()];
    let mut established = tls(srv.addr, &roots, None);

    // Not a certificate at all.
    files.write("server.pem", "-----BEGIN GARBAGE-----\n");
    srv.sighup();
    srv.wait_count("TLS reload failed", 1, Duration::from_secs(10));
    let log = srv.log();
    let line = log
        .lines()
        .find(|l| l.contains("TLS reload failed"))
        .unwrap();
    assert!(
        line.contains(&files.path("server.pem")) && line.contains("ERROR"),
        "the log names the file: {line}"
    );
    assert_eq!(tls(srv.addr, &roots, None).cert.1, 1001);

    // A good certificate whose key has not been replaced yet.
    let (cert2, key2) = leaf(&ca1, "server two", 2002, true);
    files.write("server.pem", &cert2);
    srv.sighup();
    srv.wait_count("TLS reload failed", 2, Duration::from_secs(10));
    assert_eq!(tls(srv.addr, &roots, None).cert.1, 1001);

    // Once the key is in place, the next SIGHUP takes both.
    files.write("server.key", &key2);
    srv.sighup();
    srv.wait_count("TLS material reloaded", 1, Duration::from_secs(10));
    let mut fresh = tls(srv.addr, &roots, None);
    assert_eq!(fresh.cert, ("server two".to_string(), 2002));
    assert_eq!(fresh.call("ping").unwrap(), true);
    assert_eq!(established.call("ping").unwrap(), true);
}

/// A reload reads regular files of at most 1 MiB, off the workers serving clients: a
/// certificate path swapped for a FIFO (no writer) or for `/dev/zero` is refused with a
/// log line naming it, clients are answered meanwhile, and the old certificate serves.
#[test]
fn a_fifo_or_dev_zero_as_certificate_is_refused_and_clients_keep_being_served() {
    let ca1 = ca("reload CA");
    let files = Files::new("special");
    let (cert1, key1) = leaf(&ca1, "server one", 1001, true);
    files.write("server.pem", &cert1);
    files.write("server.key", &key1);
    let srv = serve(&files, false);
    let roots = [ca1.pem.as_str()];

    let pem = files.path("server.pem");
    std::fs::remove_file(&pem).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&pem)
        .status()
        .unwrap();
    assert!(made.success());
    srv.sighup();
    srv.wait_count("TLS reload failed", 1, Duration::from_secs(10));
    let log = srv.log();
    let line = log
        .lines()
        .find(|l| l.contains("TLS reload failed"))
        .unwrap();
    assert!(
        line.contains("not a regular file") && line.contains(&pem),
        "{line}"
    );
    let started = std::time::Instant::now();
    let mut client = tls(srv.addr, &roots, None);
    assert_eq!(client.call("ping").unwrap(), true);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(client.cert.1, 1001);

    std::fs::remove_file(&pem).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &pem).unwrap();
    srv.sighup();
    srv.wait_count("TLS reload failed", 2, Duration::from_secs(10));
    assert_eq!(tls(srv.addr, &roots, None).cert.1, 1001);
    // A regular file past 1 MiB is refused too.
    std::fs::remove_file(&pem).unwrap();
    files.write("server.pem", &format!("{cert1}\n{}", "#".repeat(2 << 20)));
    srv.sighup();
    srv.wait_count("TLS reload failed", 3, Duration::from_secs(10));
    assert!(
        srv.log().contains("larger than 1048576 bytes"),
        "{}",
        srv.log()
    );
    assert_eq!(tls(srv.addr, &roots, None).cert.1, 1001);
}
