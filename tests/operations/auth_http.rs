//! `--auth` on HTTP and the WebSocket upgrade with stock clients: `requests` and
//! jsonrpclib-pelix (tests/python/auth_http_clients.py), the `websockets` library
//! (tests/python/auth_websocket.py), each with Basic and a PyJWT Bearer token; curl's
//! `-u`. The server is auth_tokens.rs's, with a fresh HS256 secret.

use super::auth_tokens::token_server;
use crate::common::run_py;
use std::net::SocketAddr;
use std::process::Command;

fn run(script: &str) {
    let (srv, dir) = token_server("hs256");
    let port = srv.addr.port().to_string();
    let out = run_py(script, &["127.0.0.1", &port, dir.0.to_str().unwrap()]);
    assert_eq!(out.trim().lines().last(), Some("ok"), "{out}");
}

#[test]
fn requests_and_jsonrpclib_with_basic_and_bearer() {
    run("auth_http_clients.py");
}

#[test]
fn websockets_upgrade_with_an_authorization_header() {
    run("auth_websocket.py");
}

/// curl's `-u` (none if `None`), a JSON-RPC call: the status line, the head and the body.
fn curl(addr: SocketAddr, user: Option<&str>, body: &str) -> (String, String) {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "-i",
        "--max-time",
        "20",
        "-H",
        "Content-Type: application/json",
    ]);
    if let Some(user) = user {
        cmd.args(["-u", user]);
    }
    let out = cmd
        .args(["--data-binary", body, &format!("http://{addr}/")])
        .output()
        .expect("run curl (apt-get install curl)");
    assert!(out.status.success(), "curl: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    (head.to_owned(), body.to_owned())
}

#[test]
fn curl_with_a_password_and_a_wrong_one() {
    let (srv, _dir) = token_server("hs256");
    let call = |user, method: &str, params: &str| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        curl(srv.addr, user, &body)
    };
    let (head, body) = call(Some("alice:wonderland"), "VM.create", r#"["curl-vm","n"]"#);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains(r#""vmId":"curl-vm""#), "{body}");
    let (head, body) = call(Some("alice:nope"), "VM.destroy", r#"["curl-vm"]"#);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("www-authenticate: basic realm=\"rpcmux\""),
        "{head}"
    );
    assert!(
        head.contains("www-authenticate: bearer realm=\"rpcmux\""),
        "{head}"
    );
    assert!(!body.contains("nope"), "{body}");
    // Refused is refused: root (allowed everything, but no password) cannot log in
    // with one either, and the VM is still there.
    let (head, _) = call(Some("root:"), "VM.destroy", r#"["curl-vm"]"#);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let (_, body) = call(Some("alice:wonderland"), "Host.getVMList", "[]");
    assert!(body.contains("curl-vm"), "a refused VM.destroy ran: {body}");
    // No credentials: what `anonymous` allows, nothing else.
    let (head, body) = call(None, "ping", "[]");
    assert!(
        head.starts_with("HTTP/1.1 200") && body.contains("true"),
        "{body}"
    );
    let (_, body) = call(None, "VM.destroy", r#"["curl-vm"]"#);
    assert!(body.contains("-32020"), "{body}");
    let (_, body) = call(Some("alice:wonderland"), "Host.getVMList", "[]");
    assert!(
        body.contains("curl-vm"),
        "an anonymous VM.destroy ran: {body}"
    );
}
