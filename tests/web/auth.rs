//! The web side under `--auth`: a WebSocket upgrade without credentials (all a browser
//! can send) is an unauthenticated connection that proves itself with `rpc.login`, one
//! with wrong credentials is refused 401; and the console, signed in through its form in
//! a headless chromium, lists and calls only what its user may.

use super::websocket::chromium;
use crate::common::hostile::error_code;
use crate::common::ws::RawWs;
use crate::common::*;

/// alice (password "wonderland") may call VM.* but not VM.destroy, Host.*, subscribe and
/// the introspection verbs, and sees |virt| events; anonymous callers may call nothing.
fn start() -> Server {
    let dir = std::env::temp_dir().join(format!("rpcmux-web-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("creds.toml");
    std::fs::write(
        &path,
        format!(
            r#"[users.alice]
password = "{}"
allow = ["VM.*", "Host.*", "subscribe", "rpc.discover", "system.*"]
deny = ["VM.destroy"]
events = ["|virt|*"]
"#,
            password_hash("wonderland")
        ),
    )
    .unwrap();
    Server::start(&["--auth", path.to_str().unwrap()])
}

/// One JSON-RPC call over `ws`; its reply (events in between are skipped).
fn call(ws: &mut RawWs, id: u32, method: &str, params: &str) -> serde_json::Value {
    ws.text(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
    ))
    .unwrap();
    for _ in 0..16 {
        let r = ws.data().expect("a reply").json();
        if r["id"] == id {
            return r;
        }
    }
    panic!("no reply to {method}");
}

#[test]
fn websocket_without_credentials_upgrades_and_logs_in_with_rpc_login() {
    let srv = start();
    // As a browser upgrades: same origin, no Authorization.
    let mut ws = RawWs::open(srv.addr, "Origin: http://127.0.0.1\r\n");
    let r = call(&mut ws, 1, "VM.create", r#"["ws-vm","n"]"#);
    assert_eq!(error_code(&r), Some(-32020), "{r}");
    let r = call(&mut ws, 2, "rpc.discover", "[]");
    assert_eq!(error_code(&r), Some(-32020), "{r}");
    let r = call(
        &mut ws,
        3,
        "rpc.login",
        r#"{"user":"alice","password":"nope"}"#,
    );
    assert_eq!(error_code(&r), Some(-32022), "{r}");
    let r = call(
        &mut ws,
        4,
        "rpc.login",
        r#"{"user":"alice","password":"wonderland"}"#,
    );
    assert_eq!(r["result"]["principal"], "alice", "{r}");
    let r = call(&mut ws, 5, "VM.create", r#"["ws-vm","n"]"#);
    assert!(r.get("error").is_none(), "{r}");
    let r = call(&mut ws, 6, "VM.destroy", r#"["ws-vm"]"#);
    assert_eq!(error_code(&r), Some(-32021), "{r}");
    let r = call(&mut ws, 7, "Host.getVMList", "[]");
    assert!(
        r["result"].as_array().unwrap().iter().any(|v| v == "ws-vm"),
        "VM.create did not run, or VM.destroy did: {r}"
    );
    // Introspection after login: what alice may call, nothing else.
    let r = call(&mut ws, 8, "rpc.discover", "[]");
    let names: Vec<_> = r["result"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.iter().any(|n| n == "VM.create"), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "VM.destroy" || n == "echo"),
        "{names:?}"
    );
}

#[test]
fn websocket_upgrade_with_wrong_credentials_is_401_and_right_ones_are_the_session_s() {
    let srv = start();
    // alice:nope
    let (_, head) = RawWs::try_open(
        srv.addr,
        "/",
        "Origin: http://127.0.0.1\r\nAuthorization: Basic YWxpY2U6bm9wZQ==\r\n",
    )
    .unwrap();
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: basic"),
        "{head}"
    );
    let (_, head) = RawWs::try_open(srv.addr, "/", "Authorization: Digest username=x\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    // alice:wonderland: the session is hers from its first call.
    let mut ws = RawWs::open(
        srv.addr,
        "Authorization: Basic YWxpY2U6d29uZGVybGFuZA==\r\n",
    );
    let r = call(&mut ws, 1, "VM.create", r#"["hdr-vm","n"]"#);
    assert!(r.get("error").is_none(), "{r}");
    // A foreign origin is still refused, credentials or not.
    let (_, head) = RawWs::try_open(srv.addr, "/", "Origin: http://evil.example\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
}

#[test]
fn console_in_headless_chromium_signs_in_and_calls_only_what_its_user_may() {
    let srv = start();
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-output/websocket");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("console-auth.png");
    let _ = std::fs::remove_file(&shot);
    let base = format!("http://{}", srv.addr);
    let out = run_node(
        "console_auth_browser.mjs",
        &[&base, &chromium(), shot.to_str().unwrap()],
    );
    let r: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    // Before signing in: the form, no verbs.
    assert_eq!(r["title"], "rpcmux console", "{r}");
    assert_eq!(r["verbs_before"], 0, "{r}");
    // A wrong password: an error and still no verbs.
    assert!(
        r["wrong_error"].as_str().unwrap().contains("login failed"),
        "{r}"
    );
    assert_eq!(r["verbs_after_wrong"], 0, "{r}");
    // Signed in: alice's verbs only.
    assert_eq!(r["principal"], "alice", "{r}");
    assert_eq!(r["has_create"], 1, "{r}");
    assert_eq!(r["has_destroy"], 0, "{r}");
    assert_eq!(r["has_echo"], 0, "{r}");
    assert_eq!(r["reply"]["result"]["vmId"], "auth-browser-vm", "{r}");
    assert!(
        r["event"]
            .as_str()
            .unwrap()
            .contains("|virt|VM_status|auth-browser-vm"),
        "{r}"
    );
    // VM.destroy typed in by hand: refused for alice, over HTTP with her credentials.
    assert_eq!(r["destroy"]["error"]["code"], -32021, "{r}");
    // Nothing kept beyond the page's memory.
    assert_eq!(r["stored"], "", "{r}");
    assert_eq!(r["errors"], serde_json::json!([]), "no page errors: {r}");
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 1000,
        "a screenshot at {shot:?}"
    );
    // The VM is there, and stayed.
    let list = r#"{"jsonrpc":"2.0","method":"Host.getVMList","id":1}"#;
    let vms = crate::common::hostile::post(
        srv.addr,
        &[
            crate::common::hostile::JSON,
            ("Authorization", "Basic YWxpY2U6d29uZGVybGFuZA=="),
        ],
        list.as_bytes(),
        1 << 20,
    )
    .unwrap()
    .text();
    assert!(vms.contains("auth-browser-vm"), "{vms}");
}
