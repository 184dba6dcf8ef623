//! WebSocket on the shared port, end to end: Python's `websockets` (plain and `wss://`),
//! jsonrpsee's own WebSocket client, and raw frames for the protocol rules (pings,
//! close codes, limits, origins) that client libraries do not let a test provoke.

use crate::common::pki;
use crate::common::ws;
use crate::common::ws::RawWs;
use crate::common::*;
use std::time::Duration;

#[test]
fn python_websockets_calls_batches_notifications_and_events() {
    let srv = Server::start(&[]);
    let out = run_py("websocket_client.py", &[&format!("ws://{}/rpc", srv.addr)]);
    assert!(out.contains("ok websocket"), "{out}");
}

#[test]
fn python_websockets_over_tls() {
    let pki = pki::Pki::new();
    let args = pki.server_flags();
    let srv = Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let url = format!("wss://localhost:{}/", srv.port());
    let out = run_py("websocket_client.py", &[&url, &pki.path("ca.pem")]);
    assert!(out.contains("ok websocket"), "{out}");
}

#[test]
fn jsonrpsee_websocket_client_calls_the_demo_verbs_and_gets_events_in_its_subscriptions() {
    let srv = Server::start(&[]);
    let out = std::process::Command::new(jsonrpsee_echo())
        .args(["--client", &format!("ws://{}/", srv.addr)])
        .output()
        .expect("run jsonrpsee-echo --client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "jsonrpsee client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "ok ping",
        "ok echo",
        "ok batch",
        "ok VM.create",
        "ok event",
        "ok subscription event",
        "ok subscription second event",
        "ok unsubscribed",
        "ok replayed in order",
    ] {
        assert!(stdout.contains(step), "{step} missing: {stdout}");
    }
}

#[test]
fn ping_is_answered_close_is_echoed_and_bad_utf8_is_1007() {
    let srv = Server::start(&[]);
    let mut c = RawWs::open(srv.addr, "");
    c.frame(true, 9, b"hello").unwrap();
    let pong = c.read().unwrap();
    assert_eq!((pong.opcode, pong.payload.as_slice()), (10, &b"hello"[..]));
    // A message in three fragments, with a ping between them.
    let req = br#"{"jsonrpc":"2.0","method":"echo","params":[42],"id":7}"#;
    c.frame(false, 1, &req[..10]).unwrap();
    c.frame(false, 0, &req[10..20]).unwrap();
    c.frame(true, 9, b"").unwrap();
    c.frame(true, 0, &req[20..]).unwrap();
    assert_eq!(c.read().unwrap().opcode, 10);
    let r = c.data().unwrap();
    assert_eq!((r.opcode, r.json()["result"].as_i64()), (1, Some(42)));
    c.frame(true, 8, &4001u16.to_be_bytes()).unwrap();
    assert_eq!(
        c.close_code(),
        Some(4001),
        "the peer's close code is echoed"
    );
    assert!(c.read().is_none(), "then the server closes the socket");

    let mut c = RawWs::open(srv.addr, "");
    c.frame(true, 1, b"{\"a\":\"\xff\"}").unwrap();
    assert_eq!(c.close_code(), Some(1007));

    let mut c = RawWs::open(srv.addr, "");
    c.s.write_all_unmasked(b"\x81\x02{}");
    assert_eq!(c.close_code(), Some(1002), "an unmasked client frame");
}

#[test]
fn oversize_message_frame_and_fragments_are_closed_with_1009_while_others_are_served() {
    let srv = Server::start(&[
        "--ws-max-message",
        "1000",
        "--ws-max-frame",
        "600",
        "--ws-max-fragments",
        "4",
    ]);
    let mut other = RawWs::open(srv.addr, "");
    let mut c = RawWs::open(srv.addr, "");
    c.frame(true, 1, &vec![b' '; 601]).unwrap();
    assert_eq!(c.close_code(), Some(1009), "frame over --ws-max-frame");
    let mut c = RawWs::open(srv.addr, "");
    c.frame(false, 1, &[b' '; 500]).unwrap();
    c.frame(false, 0, &[b' '; 500]).unwrap();
    c.frame(false, 0, b" ").unwrap();
    assert_eq!(c.close_code(), Some(1009), "message over --ws-max-message");
    let mut c = RawWs::open(srv.addr, "");
    c.frame(false, 1, b"[").unwrap();
    for _ in 0..4 {
        c.frame(false, 0, b" ").unwrap();
    }
    assert_eq!(c.close_code(), Some(1009), "over --ws-max-fragments");
    other
        .text(r#"{"jsonrpc":"2.0","method":"ping","id":1}"#)
        .unwrap();
    assert_eq!(other.data().unwrap().json()["result"], true);
    let metrics = http_get(srv.addr, "/metrics");
    for limit in ["ws_frame", "ws_message", "ws_fragments"] {
        assert!(
            metrics.contains(&format!(
                "rpcmux_limit_refusals_total{{limit=\"{limit}\"}} 1"
            )),
            "{limit} not counted:\n{metrics}"
        );
    }
}

#[test]
fn stomp_over_websocket_raw_frames() {
    let srv = Server::start(&[]);
    let mut c = RawWs::open(srv.addr, "Sec-WebSocket-Protocol: v12.stomp, v11.stomp\r\n");
    c.text("CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")
        .unwrap();
    let f = c.data().unwrap();
    assert!(
        f.payload.starts_with(b"CONNECTED\n"),
        "{:?}",
        String::from_utf8_lossy(&f.payload)
    );
    // Two frames in one message: SUBSCRIBE and a SEND carrying a JSON-RPC call.
    let body = r#"{"jsonrpc":"2.0","method":"echo","params":[1.5],"id":"s1"}"#;
    c.text(&format!(
        "SUBSCRIBE\nid:1\ndestination:jms.topic.vdsm_responses\n\n\0\
         SEND\ndestination:jms.topic.vdsm_requests\ncontent-length:{}\n\n{body}\0",
        body.len()
    ))
    .unwrap();
    let f = c.data().unwrap();
    let text = String::from_utf8_lossy(&f.payload).into_owned();
    assert!(text.starts_with("MESSAGE\n"), "{text}");
    assert!(
        text.contains(r#""result":1.5"#) && text.contains(r#""id":"s1""#),
        "{text}"
    );
    c.text("DISCONNECT\nreceipt:bye\n\n\0").unwrap();
    let f = c.data().unwrap();
    assert!(f.payload.starts_with(b"RECEIPT\nreceipt-id:bye"), "{:?}", f);
    assert_eq!(c.close_code(), Some(1000));
}

#[test]
fn graceful_shutdown_sends_close_1001() {
    let srv = Server::start(&[]);
    let mut c = RawWs::open(srv.addr, "");
    c.text(r#"{"jsonrpc":"2.0","method":"sleep","params":[300],"id":1}"#)
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    srv.sigterm();
    let r = c.data().unwrap();
    assert_eq!(r.json()["result"], 300, "the call in flight answers first");
    assert_eq!(c.close_code(), Some(1001));
}

#[test]
fn foreign_origins_are_refused_unless_allowed() {
    let srv = Server::start(&["--allow-origin", "https://app.example"]);
    let (_, head) = RawWs::try_open(srv.addr, "/", "Origin: https://evil.example\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let (_, head) = RawWs::try_open(srv.addr, "/", "Origin: http://127.0.0.1\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "same origin: {head}");
    let (_, head) = RawWs::try_open(srv.addr, "/", "Origin: https://app.example\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "listed origin: {head}");

    let create = r#"{"jsonrpc":"2.0","method":"VM.create","params":["csrf","n",1],"id":1}"#;
    let r = raw_http(srv.addr, &post(create, "Origin: https://evil.example\r\n"));
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    assert!(
        r.ends_with("origin not allowed (see --allow-origin, [web] allowed_origins)\n"),
        "the body names the flag and the setting: {r}"
    );
    let list = r#"{"jsonrpc":"2.0","method":"Host.getVMList","id":2}"#;
    let r = raw_http(srv.addr, &post(list, ""));
    assert!(
        !r.contains("csrf"),
        "the refused POST must not have run: {r}"
    );
    let r = raw_http(srv.addr, &post(list, "Origin: https://app.example\r\n"));
    assert!(
        r.to_ascii_lowercase()
            .contains("access-control-allow-origin: https://app.example"),
        "{r}"
    );
    let preflight = "OPTIONS / HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\n\
                     Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n";
    let r = raw_http(srv.addr, preflight);
    assert!(r.starts_with("HTTP/1.1 204"), "{r}");
    assert!(
        r.to_ascii_lowercase()
            .contains("access-control-allow-methods"),
        "{r}"
    );
}

fn post(body: &str, extra: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
}

fn raw_http(addr: std::net::SocketAddr, req: &str) -> String {
    String::from_utf8_lossy(&exchange(addr, req.as_bytes())).into_owned()
}

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    raw_http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    )
}

/// Writes raw bytes (an unmasked frame) past the client's framing.
trait Unmasked {
    fn write_all_unmasked(&mut self, b: &[u8]);
}

impl Unmasked for std::net::TcpStream {
    fn write_all_unmasked(&mut self, b: &[u8]) {
        std::io::Write::write_all(self, b).unwrap();
    }
}

#[test]
fn stompjs_over_node_ws_calls_and_receives_the_event() {
    let srv = Server::start(&[]);
    let out = run_node(
        "stomp_ws_client.mjs",
        &[&format!("ws://{}/stomp", srv.addr)],
    );
    assert!(out.contains("ok stomp-ws 1.2"), "{out}");
}

/// stompjs (tests/node/stomp_delivery.mjs): an event reaches every covering
/// subscription; a reply one, the most specific (an exact `reply-to` subscription made
/// after its parent gets it), the first made among several on one destination (VDSM's
/// layout); an escaped `reply-to` is answered.
#[test]
fn stompjs_events_reach_every_covering_subscription_replies_the_most_specific() {
    let srv = Server::start(&[]);
    let out = run_node("stomp_delivery.mjs", &[&format!("ws://{}/stomp", srv.addr)]);
    assert!(out.contains("ok stomp-delivery"), "{out}");
}

/// Debian's chromium: `$RPCMUX_CHROMIUM`, else `chromium` on the PATH.
pub(crate) fn chromium() -> String {
    if let Ok(p) = std::env::var("RPCMUX_CHROMIUM") {
        return p;
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = std::path::Path::new(dir).join("chromium");
        if p.exists() {
            return p.to_string_lossy().into_owned();
        }
    }
    panic!("chromium not found: apt-get install chromium (.ci/run does), or set RPCMUX_CHROMIUM");
}

#[test]
fn console_in_headless_chromium_calls_vm_create_and_shows_the_event() {
    let srv = Server::start(&[]);
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-output/websocket");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("console.png");
    let _ = std::fs::remove_file(&shot);
    let elsewhere = Server::start(&[]);
    let base = format!("http://{}", srv.addr);
    let foreign = format!("http://{}", elsewhere.addr);
    let out = run_node(
        "console_browser.mjs",
        &[&base, &chromium(), shot.to_str().unwrap(), &foreign],
    );
    let r: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["title"], "rpcmux console", "{r}");
    assert!(
        r["verbs"].as_u64().unwrap() > 10,
        "the verbs are listed: {r}"
    );
    assert!(r["help"].as_str().unwrap().contains("Create a VM"), "{r}");
    assert_eq!(r["reply"]["result"]["vmId"], "browser-vm", "{r}");
    assert!(
        r["event"]
            .as_str()
            .unwrap()
            .contains("|virt|VM_status|browser-vm"),
        "{r}"
    );
    assert_eq!(
        r["errors"],
        serde_json::json!([]),
        "no page errors (CSP included): {r}"
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 1000,
        "a screenshot at {shot:?}"
    );
    // The page of another origin: the server refused its WebSocket (403) and its POST,
    // which the browser sent (no preflight for a form-encoded body) but did not run.
    assert_eq!(r["foreign_ws"], "refused", "{r}");
    assert_eq!(r["foreign_post"], "sent", "{r}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while srv.log().matches("origin not allowed").count() < 2
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        srv.log().matches("origin not allowed").count(),
        2,
        "{}",
        srv.log()
    );
    let list = r#"{"jsonrpc":"2.0","method":"Host.getVMList","id":1}"#;
    let vms = raw_http(srv.addr, &post(list, ""));
    assert!(
        vms.contains("browser-vm") && !vms.contains("csrf-vm"),
        "{vms}"
    );
}

#[test]
fn get_root_is_the_console_for_browsers_and_the_text_index_for_curl() {
    let srv = Server::start(&[]);
    let html = raw_http(
        srv.addr,
        "GET / HTTP/1.1\r\nHost: x\r\nAccept: text/html,*/*\r\nConnection: close\r\n\r\n",
    );
    assert!(html.contains("<title>rpcmux console</title>"), "{html}");
    assert!(
        html.to_ascii_lowercase()
            .contains("content-security-policy: default-src 'none'"),
        "{html}"
    );
    let text = http_get(srv.addr, "/");
    assert!(
        text.contains("rpcmux: XML-RPC") && !text.contains("<html"),
        "{text}"
    );
    let off = Server::start(&["--no-console"]);
    let html = raw_http(
        off.addr,
        "GET / HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\nConnection: close\r\n\r\n",
    );
    assert!(!html.contains("<html"), "--no-console: {html}");
}

#[test]
fn frames_sent_with_the_upgrade_request_are_not_lost() {
    use std::io::{Read, Write};
    let srv = Server::start(&[]);
    let mut s = connect(srv.addr);
    // The upgrade and two frames in one write: hyper reads past the request head, and
    // those bytes must reach the session.
    let mut wire = ws::upgrade_request("/x", "").into_bytes();
    wire.extend(ws::encode(
        true,
        1,
        br#"{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}"#,
    ));
    wire.extend(ws::encode(
        true,
        1,
        br#"{"jsonrpc":"2.0","method":"echo","params":[2],"id":2}"#,
    ));
    s.write_all(&wire).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut ids = Vec::new();
    while ids.len() < 2 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let mut rest = &got[end + 4..];
        ids.clear();
        while let Some((f, used)) = ws::decode(rest) {
            ids.push(f.json()["id"].as_i64().unwrap());
            rest = &rest[used..];
        }
    }
    ids.sort();
    assert_eq!(ids, [1, 2]);
}
