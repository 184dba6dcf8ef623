//! HAProxy terminates TLS, verifies the client certificate and passes its CN to rpcmux in
//! the PROXY v2 SSL TLV (`send-proxy-v2-ssl-cn`); with `--proxy-cert-names` that name is
//! the caller's principal under `--auth`, as if rpcmux had verified the certificate
//! itself. Only a certificate HAProxy verified counts (a "rogue" one from an unknown CA,
//! let through by `ca-ignore-err all`, names nobody), and without the flag no name from
//! a header is believed.

use crate::common::pki::{Pki, CLIENT_CN};
use crate::common::{run_py, Server};
use crate::haproxy::{free_port, HaProxy};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

/// One JSON-RPC call of `method` through HAProxy's TLS frontend on `port`, with the
/// client certificate `cert` ("client", "rogue") or none; the whole reply.
fn call(pki: &Pki, port: u16, cert: Option<&str>, method: &str) -> Value {
    let (port, ca) = (port.to_string(), pki.path("ca.pem"));
    let mut args = vec![
        "127.0.0.1".to_owned(),
        port,
        ca,
        "call".into(),
        method.into(),
    ];
    if let Some(name) = cert {
        args.extend([
            "--cert".into(),
            pki.path(&format!("{name}.pem")),
            "--key".into(),
            pki.path(&format!("{name}.key")),
        ]);
    }
    let out = run_py(
        "tls_client.py",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn a_certificate_haproxy_verified_is_the_principal() {
    let pki = Pki::new();
    // HAProxy wants the certificate and its key in one file.
    let bundle = std::fs::read_to_string(pki.path("server.pem")).unwrap()
        + &std::fs::read_to_string(pki.path("server.key")).unwrap();
    pki.write("haproxy.pem", &bundle);
    // Nobody may call anything without a name; the certificate's holder may call all.
    pki.write(
        "creds.toml",
        &format!("anonymous = []\n[users.{CLIENT_CN}]\nallow = [\"*\"]\n"),
    );
    let creds = pki.path("creds.toml");
    let common = ["--proxy-from", "127.0.0.1/32", "--auth", creds.as_str()];
    let believing = Server::start(&[&common[..], &["--proxy-cert-names"]].concat());
    let doubting = Server::start(&common);

    let (believe_port, doubt_port) = (free_port(), free_port());
    let d = pki.dir().display();
    let tls = format!(
        "ssl crt {d}/haproxy.pem ca-file {d}/ca.pem verify optional ca-ignore-err all crt-ignore-err all"
    );
    let config = format!(
        "global
    maxconn 64
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend believe
    bind 127.0.0.1:{believe_port} {tls}
    default_backend believe
frontend doubt
    bind 127.0.0.1:{doubt_port} {tls}
    default_backend doubt
backend believe
    server s {} send-proxy-v2-ssl-cn
backend doubt
    server s {} send-proxy-v2-ssl-cn
",
        believing.addr, doubting.addr
    );
    let cfg = pki.dir().join("haproxy.cfg");
    std::fs::write(&cfg, config).unwrap();
    let log = std::fs::File::create(pki.dir().join("haproxy.log")).unwrap();
    let _haproxy = HaProxy::start(&cfg, log.into());
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", doubt_port)).is_err() {
        assert!(
            Instant::now() < end,
            "haproxy did not come up: {}",
            std::fs::read_to_string(pki.dir().join("haproxy.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let who = call(&pki, believe_port, Some("client"), "whoami");
    assert_eq!(who["result"]["principal"], CLIENT_CN, "{who}");
    assert_eq!(who["result"]["identity"], CLIENT_CN, "{who}");
    assert_eq!(
        who["result"]["peer"]
            .as_str()
            .map(|p| p.starts_with("127.0.0.1:")),
        Some(true),
        "{who}"
    );

    // A certificate HAProxy could not verify (same CN, unknown CA): anonymous.
    let rogue = call(&pki, believe_port, Some("rogue"), "whoami");
    assert_eq!(rogue["error"]["code"], -32020, "{rogue}");
    let none = call(&pki, believe_port, None, "whoami");
    assert_eq!(none["error"]["code"], -32020, "{none}");

    // Without --proxy-cert-names the TLV names nobody, verified or not.
    let doubted = call(&pki, doubt_port, Some("client"), "whoami");
    assert_eq!(doubted["error"]["code"], -32020, "{doubted}");
}

#[test]
fn proxy_cert_names_without_a_trusted_balancer_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["serve", "--listen", "127.0.0.1:0", "--proxy-cert-names"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--proxy-from"), "{err}");
}
