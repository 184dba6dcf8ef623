//! The PROXY v2 SSL TLV as a real HAProxy sends it: HAProxy terminates TLS with client
//! certificates (`verify required`, or `verify optional` ignoring verification errors)
//! and forwards to a plain listener here with `send-proxy-v2-ssl-cn` (or `send-proxy-v2`
//! with every SSL option and a CRC32C); the header bytes it reads go through `parse`.
//! Clients are `openssl s_client`, certificates are made with the `openssl` CLI.
//!
//! Without `haproxy` or `openssl` on the PATH (or in /usr/sbin, /usr/local/sbin) the test
//! says so and passes, unless `CI` is set: then it fails.

use rpcmux_sniff::proxy_header::{parse, Parsed, SslInfo, MAX_HEADER};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const WAIT: Duration = Duration::from_secs(20);

/// `name` if it runs; otherwise `None` with a message, or a panic in CI.
fn tool(name: &str) -> Option<PathBuf> {
    let candidates = [
        PathBuf::from(name),
        Path::new("/usr/sbin").join(name),
        Path::new("/usr/local/sbin").join(name),
    ];
    let found = candidates.into_iter().find(|p| {
        Command::new(p)
            .arg(if name == "openssl" { "version" } else { "-v" })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        let why = format!("`{name}` is not installed (apt-get install {name})");
        if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
            panic!("{why}: CI must run this test");
        }
        eprintln!("SKIPPED haproxy_ssl: {why}; with CI set this fails");
    }
    found
}

/// A directory of its own, removed at the end.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "rpcmux-sniff-haproxy-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Certificates in `dir`: a CA (`ca.crt`), the proxy's (`server.pem`, cert and key),
/// alice's signed by the CA and mallory's self-signed (`<name>.crt`, `<name>.key`).
fn make_certs(openssl: &Path, dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let openssl = || {
        let mut c = Command::new(openssl);
        c.current_dir(dir);
        c
    };
    let self_signed = |name: &str, subject: &str| {
        run(openssl()
            .args(["req", "-x509", "-days", "2", "-subj", subject, "-keyout"])
            .arg(format!("{name}.key"))
            .arg("-out")
            .arg(format!("{name}.crt"))
            .args(ec));
    };
    let signed = |name: &str, subject: &str, serial: &str| {
        run(openssl()
            .args(["req", "-subj", subject, "-keyout"])
            .arg(format!("{name}.key"))
            .arg("-out")
            .arg(format!("{name}.csr"))
            .args(ec));
        run(openssl()
            .args([
                "x509", "-req", "-days", "2", "-CA", "ca.crt", "-CAkey", "ca.key",
            ])
            .args(["-set_serial", serial, "-in"])
            .arg(format!("{name}.csr"))
            .arg("-out")
            .arg(format!("{name}.crt")));
    };
    self_signed("ca", "/CN=rpcmux sniff test CA");
    signed("server", "/CN=localhost", "2");
    signed("alice", "/O=rpcmux tests/CN=alice.example", "3");
    self_signed("mallory", "/CN=mallory.example");
    let mut pem = std::fs::read(dir.join("server.crt")).unwrap();
    pem.extend(std::fs::read(dir.join("server.key")).unwrap());
    std::fs::write(dir.join("server.pem"), pem).unwrap();
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Connect to `port` through `openssl s_client` with the client certificate `cert`
/// (`None`: none), and return the PROXY header bytes HAProxy then sends `backend`.
fn header_for(
    openssl: &Path,
    dir: &Path,
    backend: &TcpListener,
    port: u16,
    cert: Option<&str>,
) -> Vec<u8> {
    let mut cmd = Command::new(openssl);
    cmd.current_dir(dir)
        .args([
            "s_client",
            "-quiet",
            "-CAfile",
            "ca.crt",
            "-servername",
            "localhost",
        ])
        .arg("-connect")
        .arg(format!("127.0.0.1:{port}"));
    if let Some(name) = cert {
        cmd.arg("-cert")
            .arg(format!("{name}.crt"))
            .arg("-key")
            .arg(format!("{name}.key"));
    }
    // stdin stays open (a pipe) so the client holds its connection until killed.
    let client = Killed(
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (tx, rx) = mpsc::channel();
    let listener = backend.try_clone().unwrap();
    thread::spawn(move || {
        let result = (|| {
            let (mut conn, _) = listener.accept()?;
            conn.set_read_timeout(Some(WAIT))?;
            let mut buf = Vec::new();
            let mut chunk = [0; 4096];
            // Read until the header is whole (HAProxy sends it before any data).
            while matches!(parse(&buf), Parsed::NeedMore) && buf.len() < MAX_HEADER {
                let n = conn.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                buf.extend(&chunk[..n]);
            }
            std::io::Result::Ok(buf)
        })();
        let _ = tx.send(result);
    });
    match rx.recv_timeout(WAIT) {
        Ok(Ok(buf)) => buf,
        Ok(Err(e)) => panic!("reading the PROXY header: {e}"),
        Err(_) => {
            let mut client = client;
            let _ = client.0.kill();
            let mut stderr = String::new();
            if let Some(mut e) = client.0.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            panic!("no connection from haproxy for client cert {cert:?}; s_client: {stderr}")
        }
    }
}

/// The header in `wire` (exactly a header), which must parse, and its SSL TLV.
fn ssl_of(wire: &[u8]) -> SslInfo {
    let h = match parse(wire) {
        Parsed::Header(h) => h,
        other => panic!("{other:?} from {wire:02x?}"),
    };
    assert_eq!(h.version, 2);
    assert_eq!(h.len, wire.len(), "{wire:02x?}");
    let source = h.source.expect("a PROXY header with the client's address");
    assert_eq!(source.ip(), Ipv4Addr::LOCALHOST);
    h.ssl(wire)
        .unwrap_or_else(|| panic!("no SSL TLV in {wire:02x?}"))
}

#[test]
fn haproxy_sends_the_client_certificate_cn() {
    let (Some(haproxy), Some(openssl)) = (tool("haproxy"), tool("openssl")) else {
        return;
    };
    let tmp = TempDir::new();
    let dir = &tmp.0;
    make_certs(&openssl, dir);

    let backend = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let backend_port = backend.local_addr().unwrap().port();
    let (required, optional) = (free_port(), free_port());
    let d = dir.display();
    let config = format!(
        "global
    maxconn 64
defaults
    mode tcp
    timeout connect 10s
    timeout client 30s
    timeout server 30s
frontend required
    bind 127.0.0.1:{required} ssl crt {d}/server.pem ca-file {d}/ca.crt verify required
    default_backend cn
frontend optional
    bind 127.0.0.1:{optional} ssl crt {d}/server.pem ca-file {d}/ca.crt verify optional crt-ignore-err all ca-ignore-err all
    default_backend every_option
backend cn
    server s 127.0.0.1:{backend_port} send-proxy-v2-ssl-cn
backend every_option
    server s 127.0.0.1:{backend_port} send-proxy-v2 proxy-v2-options ssl,cert-cn,ssl-cipher,cert-sig,cert-key,crc32c
"
    );
    std::fs::write(dir.join("haproxy.cfg"), config).unwrap();
    run(Command::new(&haproxy)
        .args(["-c", "-q", "-f"])
        .arg(dir.join("haproxy.cfg")));
    let log = std::fs::File::create(dir.join("haproxy.log")).unwrap();
    let mut proxy = Killed(
        Command::new(&haproxy)
            .arg("-db")
            .arg("-f")
            .arg(dir.join("haproxy.cfg"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    for port in [required, optional] {
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Some(status) = proxy.0.try_wait().unwrap() {
                let log = std::fs::read_to_string(dir.join("haproxy.log")).unwrap();
                panic!("haproxy exited ({status}):\n{log}");
            }
            assert!(
                started.elapsed() < WAIT,
                "haproxy does not listen on {port}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    // `send-proxy-v2-ssl-cn` behind `verify required`: alice's CN, verified.
    let wire = header_for(&openssl, dir, &backend, required, Some("alice"));
    let ssl = ssl_of(&wire);
    assert!(
        ssl.client_ssl && ssl.cert_in_connection && ssl.cert_in_session,
        "{ssl:?}"
    );
    assert_eq!((ssl.verify, ssl.verified), (0, true));
    assert_eq!(ssl.cn.as_deref(), Some("alice.example"));
    assert_eq!(ssl.verified_cn(), Some("alice.example"));
    assert!(
        ssl.version
            .as_deref()
            .is_some_and(|v| v.starts_with("TLSv1.")),
        "{ssl:?}"
    );
    // That server line sends neither cipher nor algorithms.
    assert_eq!((ssl.cipher, ssl.sig_alg, ssl.key_alg), (None, None, None));

    // Every SSL option and a CRC32C, alice again.
    let wire = header_for(&openssl, dir, &backend, optional, Some("alice"));
    let ssl = ssl_of(&wire);
    assert_eq!(ssl.verified_cn(), Some("alice.example"));
    assert!(ssl.cipher.is_some() && ssl.sig_alg.is_some(), "{ssl:?}");
    assert!(
        ssl.key_alg.as_deref().is_some_and(|k| k.starts_with("EC")),
        "{ssl:?}"
    );
    // The checksum is there and checked: one changed bit of the client's port and
    // the header is refused.
    let mut bad = wire.clone();
    bad[16 + 8] ^= 0x01;
    assert!(matches!(parse(&bad), Parsed::Malformed(e) if e.contains("CRC32C")));

    // No client certificate: TLS, and nothing else.
    let wire = header_for(&openssl, dir, &backend, optional, None);
    let ssl = ssl_of(&wire);
    assert!(
        ssl.client_ssl && !ssl.cert_in_connection && !ssl.cert_in_session,
        "{ssl:?}"
    );
    assert_eq!((ssl.cn.as_deref(), ssl.verified_cn()), (None, None));

    // A certificate HAProxy could not verify (self-signed, let through by
    // `crt-ignore-err all`): its CN is sent, with a non-zero `verify`.
    let wire = header_for(&openssl, dir, &backend, optional, Some("mallory"));
    let ssl = ssl_of(&wire);
    assert!(ssl.cert_in_connection && ssl.cert_in_session, "{ssl:?}");
    assert_eq!(ssl.cn.as_deref(), Some("mallory.example"));
    assert!(ssl.verify != 0 && !ssl.verified, "{ssl:?}");
    assert_eq!(ssl.verified_cn(), None);
}
