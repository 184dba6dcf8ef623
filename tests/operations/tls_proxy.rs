//! TLS and the PROXY protocol on the shared port, end to end: the real binary, a test
//! PKI made here with rcgen, Python's `ssl` (stdlib http.client, xmlrpc.client, raw
//! sockets), `requests` and aio-msgpack-rpc as TLS clients, raw sockets for PROXY headers.

use crate::common::pki::{Pki, CLIENT_CN};
use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// `rpcmux serve` with the test server certificate and `extra` flags.
fn tls_server(pki: &Pki, extra: &[&str]) -> Server {
    let mut args = pki.server_flags();
    args.extend(extra.iter().map(|s| s.to_string()));
    Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Run tests/python/tls_client.py against `srv`; its JSON output.
fn py(srv: &Server, pki: &Pki, command: &[&str], extra: &[&str]) -> Value {
    let (port, ca) = (srv.port(), pki.path("ca.pem"));
    let mut args = vec!["127.0.0.1", port.as_str(), ca.as_str()];
    args.extend_from_slice(command);
    args.extend_from_slice(extra);
    let out = run_py("tls_client.py", &args);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn client_cert(pki: &Pki, name: &str) -> Vec<String> {
    vec![
        "--cert".into(),
        pki.path(&format!("{name}.pem")),
        "--key".into(),
        pki.path(&format!("{name}.key")),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// One JSON-RPC call over a plaintext raw-TCP connection whose first bytes are `preamble`.
fn call_after(addr: SocketAddr, preamble: &[u8], method: &str) -> Option<Value> {
    let s = connect(addr);
    call_on(s, preamble, method)
}

fn call_on(mut s: TcpStream, preamble: &[u8], method: &str) -> Option<Value> {
    let req = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"id\":1}}\n");
    let mut bytes = preamble.to_vec();
    bytes.extend_from_slice(req.as_bytes());
    // A refused connection may be reset while we write; that is a refusal too.
    if s.write_all(&bytes).is_err() {
        return None;
    }
    let mut line = String::new();
    match BufReader::new(s).read_line(&mut line) {
        Ok(n) if n > 0 => Some(json(line.as_bytes())["result"].clone()),
        _ => None,
    }
}

fn v1(src: &str, sport: u16) -> Vec<u8> {
    let fam = if src.contains(':') { "TCP6" } else { "TCP4" };
    let dst = if src.contains(':') {
        "::1"
    } else {
        "127.0.0.1"
    };
    format!("PROXY {fam} {src} {dst} {sport} 54321\r\n").into_bytes()
}

fn v2(command: u8, src: std::net::IpAddr, sport: u16) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    let mut body = Vec::new();
    let fam = match src {
        std::net::IpAddr::V4(ip) => {
            body.extend(ip.octets());
            body.extend([127, 0, 0, 1]);
            0x11
        }
        std::net::IpAddr::V6(ip) => {
            body.extend(ip.octets());
            body.extend(std::net::Ipv6Addr::LOCALHOST.octets());
            0x21
        }
    };
    body.extend(sport.to_be_bytes());
    body.extend(54321u16.to_be_bytes());
    h.extend([0x20 | command, fam]);
    h.extend((body.len() as u16).to_be_bytes());
    h.extend(body);
    h
}

/// Connect to `addr` from the loopback address `from` (127.0.0.2 is not 127.0.0.1).
fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    sock.bind(&local.into()).unwrap();
    sock.connect(&addr.into()).unwrap();
    let s: TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// How many times `needle` is in the log, once it is there `n` times or 5 s have passed
/// (the server logs asynchronously, after the client has seen the close).
fn log_count(srv: &Server, needle: &str, n: usize) -> usize {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let count = srv.log().matches(needle).count();
        if count >= n || Instant::now() > end {
            return count;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Read until the server closes: the bytes it sent (none, for a refusal).
fn drain(mut s: TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn jsonrpc_over_https_and_over_tls_tcp_next_to_plaintext() {
    let pki = Pki::new();
    let srv = tls_server(&pki, &[]);
    let out = py(&srv, &pki, &["https"], &[]);
    assert_eq!(out["alpn"], "http/1.1", "{out}");
    assert_eq!(out["tls_version"], "TLSv1.3", "{out}");
    assert_eq!(out["whoami"]["protocol"], "jsonrpc-http", "{out}");
    assert!(out["whoami"]["peer"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert_eq!(
        out["whoami"]["identity"],
        Value::Null,
        "no client CA: no identity"
    );
    assert_eq!(out["requests_whoami"]["protocol"], "jsonrpc-http", "{out}");

    let out = py(&srv, &pki, &["tcp"], &[]);
    assert_eq!(out["whoami"]["protocol"], "jsonrpc-tcp", "{out}");
    assert_eq!(out["alpn"], Value::Null, "no ALPN offered, none chosen");

    // A certificate without --tls means `optional`: plaintext still works on the port.
    assert_eq!(call_after(srv.addr, b"", "ping"), Some(Value::Bool(true)));
    let (status, _, _) = http_post(
        srv.addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
    );
    assert_eq!(status, 200);
}

#[test]
fn xmlrpc_and_msgpack_rpc_over_tls() {
    let pki = Pki::new();
    let srv = tls_server(&pki, &["--tls", "required"]);
    let out = py(&srv, &pki, &["xmlrpc"], &[]);
    assert_eq!(out["whoami"]["protocol"], "xmlrpc", "{out}");
    let out = py(&srv, &pki, &["msgpack"], &[]);
    assert_eq!(out["whoami"]["protocol"], "msgpack-rpc", "{out}");
}

#[test]
fn jsonrpc_over_stomp_over_mutual_tls() {
    let pki = Pki::new();
    let ca = pki.path("ca.pem");
    let srv = tls_server(&pki, &["--tls", "required", "--tls-client-ca", &ca]);
    let good = client_cert(&pki, "client");
    let out = py(&srv, &pki, &["stomp"], &strs(&good));
    assert_eq!(out["whoami"]["identity"], CLIENT_CN, "{out}");
    assert_eq!(out["whoami"]["protocol"], "stomp", "{out}");
}

#[test]
fn mutual_tls_gives_verbs_the_identity_and_refuses_clients_without_a_good_cert() {
    let pki = Pki::new();
    let ca = pki.path("ca.pem");
    let srv = tls_server(&pki, &["--tls-client-ca", &ca]);
    let good = client_cert(&pki, "client");
    for cmd in ["https", "tcp", "xmlrpc", "msgpack"] {
        let out = py(&srv, &pki, &[cmd], &strs(&good));
        assert_eq!(out["whoami"]["identity"], CLIENT_CN, "{cmd}: {out}");
        // Without --auth there is no principal: the name is the identity only.
        assert!(out["whoami"]["principal"].is_null(), "{cmd}: {out}");
    }
    let out = py(&srv, &pki, &["refused"], &[]);
    assert!(out["refused"].is_string(), "{out}");
    assert_eq!(
        log_count(&srv, "TLS handshake failed", 1),
        1,
        "{}",
        srv.log()
    );
    let rogue = client_cert(&pki, "rogue");
    let out = py(&srv, &pki, &["refused"], &strs(&rogue));
    assert!(out["refused"].is_string(), "{out}");
    assert_eq!(
        log_count(&srv, "TLS handshake failed", 2),
        2,
        "{}",
        srv.log()
    );
}

#[test]
fn plaintext_is_refused_when_tls_is_required() {
    let pki = Pki::new();
    let srv = tls_server(&pki, &["--tls", "required"]);
    // Raw-TCP JSON-RPC (and every other protocol but HTTP): closed without a word.
    assert_eq!(call_after(srv.addr, b"", "ping"), None);
    assert!(
        srv.wait_log("plaintext refused: TLS is required", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
    // Plaintext HTTP gets a short 400 saying to use https://, then the close (as nginx
    // answers; curl said "Empty reply from server", Python RemoteDisconnected).
    let out = exchange(srv.addr, b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
    assert!(
        text.ends_with("This port requires TLS: send the request over https://.\n"),
        "{text}"
    );
    let url = format!("http://localhost:{}/", srv.port());
    let curl = Command::new("curl")
        .args([
            "-sS",
            "-w",
            "\n%{http_code}",
            "-d",
            r#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
            &url,
        ])
        .output()
        .expect("curl");
    let said = String::from_utf8_lossy(&curl.stdout);
    assert!(
        curl.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&curl.stderr)
    );
    let host = format!("https://localhost:{}/", srv.port());
    assert_eq!(
        said,
        format!("This port requires TLS: send the request over https:// ({host}).\n\n400"),
    );
    let script = r#"
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.request("POST", "/RPC2", body="<?xml version='1.0'?><methodCall><methodName>ping</methodName></methodCall>", headers={"Content-Type": "text/xml"})
r = c.getresponse()
print(r.status, r.getheader("Connection"), r.read().decode(), end="")
"#;
    let stdlib = Command::new(python("RPCMUX_PY_CLIENTS", "clients"))
        .args(["-c", script, &srv.port()])
        .output()
        .expect("python");
    assert!(
        stdlib.status.success(),
        "{}",
        String::from_utf8_lossy(&stdlib.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&stdlib.stdout),
        format!(
            "400 close This port requires TLS: send the request over https:// (https://127.0.0.1:{}/).\n",
            srv.port()
        )
    );
    let out = py(&srv, &pki, &["tcp"], &[]);
    assert_eq!(out["whoami"]["protocol"], "jsonrpc-tcp", "{out}");
}

#[test]
fn five_megabyte_echo_over_tls_arrives_whole() {
    let pki = Pki::new();
    let srv = tls_server(&pki, &[]);
    let n = 5 << 20;
    let out = py(&srv, &pki, &["echo-big", &n.to_string()], &[]);
    assert_eq!(out["tcp"], n, "{out}");
    assert_eq!(out["https"], n, "{out}");
}

#[test]
fn stalled_handshake_is_closed_at_its_own_deadline_while_others_are_served() {
    let pki = Pki::new();
    // The handshake deadline (2 s) is not the sniff deadline (0.5 s): 0x16 decides the
    // sniff at once, and the handshake then gets its own time.
    let srv = tls_server(
        &pki,
        &["--sniff-timeout", "0.5", "--tls-handshake-timeout", "2"],
    );
    let mut stalled = connect(srv.addr);
    stalled.write_all(&[0x16]).unwrap();
    let started = Instant::now();
    let out = py(&srv, &pki, &["tcp"], &[]);
    assert_eq!(out["whoami"]["protocol"], "jsonrpc-tcp", "{out}");
    assert_eq!(call_after(srv.addr, b"", "ping"), Some(Value::Bool(true)));
    let mut buf = [0u8; 64];
    let n = stalled
        .read(&mut buf)
        .expect("closed by the server, not a timeout");
    let waited = started.elapsed();
    assert_eq!(n, 0, "closed without a reply: {:?}", &buf[..n]);
    assert!(
        waited >= Duration::from_millis(1800) && waited < Duration::from_secs(6),
        "{waited:?}"
    );
    assert!(
        srv.wait_log("TLS handshake deadline passed", Duration::from_secs(2)),
        "{}",
        srv.log()
    );
}

#[test]
fn tls_client_hello_to_a_plaintext_listener_is_closed_and_named() {
    let srv = Server::start(&[]);
    let mut s = connect(srv.addr);
    s.write_all(&[0x16, 0x03, 0x01, 0x00, 0x05]).unwrap();
    assert!(drain(s).is_empty());
    assert!(
        srv.wait_log("TLS ClientHello but TLS is off", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
}

#[test]
fn proxy_v1_and_v2_from_a_trusted_source_give_verbs_the_client_address() {
    let pki = Pki::new();
    let srv = tls_server(&pki, &["--proxy-from", "127.0.0.1/32"]);
    let who = |pre: &[u8]| call_after(srv.addr, pre, "whoami").expect("a reply");

    let w = who(&v1("203.0.113.9", 41000));
    assert_eq!(w["peer"], "203.0.113.9:41000", "{w}");
    let w = who(&v1("2001:db8::9", 41001));
    assert_eq!(w["peer"], "[2001:db8::9]:41001", "{w}");
    let w = who(&v2(1, "198.51.100.7".parse().unwrap(), 42000));
    assert_eq!(w["peer"], "198.51.100.7:42000", "{w}");
    let w = who(&v2(1, "2001:db8::7".parse().unwrap(), 42001));
    assert_eq!(w["peer"], "[2001:db8::7]:42001", "{w}");
    // LOCAL (a balancer's own health check): the socket peer stands.
    let w = who(&v2(0, "198.51.100.7".parse().unwrap(), 42002));
    assert!(w["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{w}");

    // The header trickling in byte by byte, then the request: nothing after it is lost.
    let mut s = connect(srv.addr);
    for b in v1("203.0.113.10", 41002) {
        s.write_all(&[b]).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let w = call_on(s, b"", "whoami").expect("a reply");
    assert_eq!(w["peer"], "203.0.113.10:41002", "{w}");

    // HTTP after the header.
    let body = br#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;
    let mut req = v2(1, "198.51.100.8".parse().unwrap(), 42003);
    req.extend(
        format!(
            "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .bytes(),
    );
    req.extend(body);
    let (status, _, reply) = parse_http(&exchange(srv.addr, &req));
    assert_eq!(status, 200);
    assert_eq!(json(&reply)["result"]["peer"], "198.51.100.8:42003");

    // The carried address is the one logged.
    let mut junk = v1("203.0.113.11", 41003);
    junk.extend(b"\x00\x01junk\n");
    assert!(exchange(srv.addr, &junk).is_empty());
    assert!(
        srv.wait_log("203.0.113.11:41003", Duration::from_secs(5)),
        "{}",
        srv.log()
    );

    // PROXY then TLS (HAProxy `send-proxy` in front of a TLS backend), and mTLS-less identity.
    for flag in ["--proxy-v1", "--proxy-v2"] {
        let out = py(&srv, &pki, &["tcp"], &[flag, "192.0.2.44:43000"]);
        assert_eq!(out["whoami"]["peer"], "192.0.2.44:43000", "{flag}: {out}");
        let out = py(&srv, &pki, &["https"], &[flag, "[2001:db8::44]:43001"]);
        assert_eq!(
            out["whoami"]["peer"], "[2001:db8::44]:43001",
            "{flag}: {out}"
        );
    }
}

#[test]
fn proxy_header_with_mutual_tls_carries_both_address_and_identity() {
    let pki = Pki::new();
    let ca = pki.path("ca.pem");
    let srv = tls_server(
        &pki,
        &[
            "--tls",
            "required",
            "--tls-client-ca",
            &ca,
            "--proxy-from",
            "127.0.0.0/8",
        ],
    );
    let good = client_cert(&pki, "client");
    let mut args = strs(&good);
    args.extend(["--proxy-v2", "192.0.2.50:44000"]);
    let out = py(&srv, &pki, &["tcp"], &args);
    assert_eq!(out["whoami"]["peer"], "192.0.2.50:44000", "{out}");
    assert_eq!(out["whoami"]["identity"], CLIENT_CN, "{out}");
    // Required TLS: a trusted PROXY header followed by plaintext is still plaintext.
    assert_eq!(call_after(srv.addr, &v1("192.0.2.51", 1), "ping"), None);
    assert!(
        srv.wait_log("plaintext refused", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
}

#[test]
fn proxy_header_from_an_untrusted_source_is_refused() {
    let srv = Server::start(&["--proxy-from", "127.0.0.1/32"]);
    // 127.0.0.2 is loopback too, but not in the trusted network.
    for pre in [
        v1("203.0.113.9", 41000),
        v2(1, "203.0.113.9".parse().unwrap(), 1),
    ] {
        let s = connect_from("127.0.0.2", srv.addr);
        assert_eq!(call_on(s, &pre, "whoami"), None);
    }
    assert_eq!(
        log_count(&srv, "PROXY header from an untrusted source", 2),
        2,
        "{}",
        srv.log()
    );
    // Without the header the same source is served as itself.
    let w = call_on(connect_from("127.0.0.2", srv.addr), b"", "whoami").unwrap();
    assert!(w["peer"].as_str().unwrap().starts_with("127.0.0.2:"), "{w}");

    // No --proxy-from at all: nobody may send one, not even as an HTTP-looking line.
    let srv = Server::start(&[]);
    let out = exchange(srv.addr, &v1("203.0.113.9", 41000));
    assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));
    assert!(
        srv.wait_log("untrusted source", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
}

#[test]
fn malformed_proxy_header_from_a_trusted_source_is_closed_and_logged() {
    let srv = Server::start(&["--proxy-from", "127.0.0.1/32", "--sniff-timeout", "1"]);
    let mut bad_v2 = v2(1, "203.0.113.9".parse().unwrap(), 1);
    bad_v2[12] = 0x31; // version 3
    for bad in [
        b"PROXY TCP4 not.an.ip 127.0.0.1 1 2\r\n".to_vec(),
        b"PROXY TCP4 1.2.3.4 127.0.0.1 70000 2\r\n".to_vec(),
        [b"PROXY TCP4 ".as_slice(), &[b'9'; 200]].concat(),
        bad_v2,
    ] {
        assert_eq!(
            call_after(srv.addr, &bad, "ping"),
            None,
            "{:?}",
            String::from_utf8_lossy(&bad)
        );
    }
    assert_eq!(
        log_count(&srv, "malformed PROXY header", 4),
        4,
        "{}",
        srv.log()
    );
    // A header that never ends is cut at the sniff deadline.
    let mut s = connect(srv.addr);
    s.write_all(b"PROXY TCP4 1.2.3.4").unwrap();
    let started = Instant::now();
    assert!(drain(s).is_empty());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        srv.wait_log("PROXY header not complete", Duration::from_secs(2)),
        "{}",
        srv.log()
    );
}

#[test]
fn bad_tls_settings_stop_the_server_at_startup_with_a_clear_message() {
    let pki = Pki::new();
    pki.write("garbage.pem", "not a certificate\n");
    let missing = pki.path("missing.pem");
    let (cert, key, garbage) = (
        pki.path("server.pem"),
        pki.path("server.key"),
        pki.path("garbage.pem"),
    );
    let client_key = pki.path("client.key");
    for (args, want) in [
        (
            vec!["--tls-cert", &missing, "--tls-key", &key],
            "missing.pem",
        ),
        (
            vec!["--tls-cert", &garbage, "--tls-key", &key],
            "garbage.pem",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &garbage],
            "garbage.pem",
        ),
        (vec!["--tls-cert", &cert], "--tls-key"),
        (vec!["--tls", "required"], "--tls-cert"),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-client-ca",
                &garbage,
            ],
            "garbage.pem",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &client_key],
            "server.pem",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(out.stdout.is_empty(), "{args:?} listened");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
