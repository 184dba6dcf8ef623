//! A real HAProxy in front of rpcmux on a Unix-domain socket (`server s0 /path
//! send-proxy-v2`), the way a local balancer reaches a backend without a TCP port: with
//! `--unix-proxy` the PROXY v2 header names each client, so calls see the client's own
//! address and port, not the balancer's process. Without it, a PROXY header on the
//! socket is refused.

use crate::common::{self, Server};
use crate::haproxy::{free_port, HaProxy};
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `whoami` over HTTP/1.1 through `port`; the reply, and the address we called from.
fn whoami_through(port: u16) -> Option<(serde_json::Value, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"whoami"}"#;
    let req = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let (status, _, body) = common::parse_http(&raw);
    (status == 200).then(|| (common::json(&body), s.local_addr().unwrap().to_string()))
}

#[test]
fn haproxy_on_a_socket_file_names_each_client_by_proxy_v2() {
    let dir = common::temp_dir("hap-unix");
    let sock = dir.join("rpcmux.sock");
    let srv = Server::start(&[
        "--listen",
        &format!("unix:{}", sock.display()),
        "--unix-proxy",
        "--access-log",
        "info",
    ]);
    let port = free_port();
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n    maxconn 100\ndefaults\n    mode http\n    timeout connect 2s\n    \
             timeout client 10s\n    timeout server 10s\nfrontend fe\n    bind 127.0.0.1:{port}\n    \
             default_backend be\nbackend be\n    server s0 {} send-proxy-v2\n",
            sock.display()
        ),
    )
    .unwrap();
    let _haproxy = HaProxy::start(&cfg, Stdio::null());
    let end = Instant::now() + Duration::from_secs(10);
    let (reply, me) = loop {
        if let Some(r) = whoami_through(port) {
            break r;
        }
        assert!(
            Instant::now() < end,
            "haproxy did not come up; {}",
            srv.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        reply["result"]["peer"], me,
        "the client's own address and port, from the PROXY header: {reply}"
    );
    assert!(
        srv.wait_log(&format!("peer={me}"), Duration::from_secs(5)),
        "the access log names the client: {}",
        srv.log()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_unix_proxy_a_proxy_header_on_the_socket_is_refused() {
    let dir = common::temp_dir("hap-unix-off");
    let sock = dir.join("rpcmux.sock");
    let srv = Server::start(&["--listen", &format!("unix:{}", sock.display())]);
    let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"whoami"}"#;
    let req = format!(
        "PROXY TCP4 192.0.2.7 192.0.2.1 4242 80\r\nPOST / HTTP/1.1\r\nHost: localhost\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    assert!(
        raw.is_empty(),
        "closed unanswered: {:?}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        srv.wait_log("untrusted source", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
