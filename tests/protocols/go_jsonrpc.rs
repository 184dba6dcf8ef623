//! Go's own JSON-RPC 1.0 client, `net/rpc/jsonrpc` (tests/go/jsonrpc_client), over raw
//! TCP: its errors are strings (`[jsonrpc] v1_error`'s default on raw TCP), `[null]`
//! calls a verb of no parameters, and calls and errors pipelined on one connection, 200
//! at once, each get their own reply.

use crate::common::*;

#[test]
fn go_net_rpc_jsonrpc_client() {
    let client = go_build("jsonrpc_client");
    let srv = Server::start(&[]);
    let out = std::process::Command::new(client)
        .arg(srv.addr.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        6,
        "{stdout}"
    );
}

/// Told `v1_error = "object"`, raw TCP answers 1.0 errors as objects (bitcoind's shape),
/// and HTTP with `"string"` as text: the setting overrides the transport's default.
#[test]
fn v1_error_setting_overrides_the_transport() {
    let dir = temp_dir("v1-error");
    let object = dir.join("object.toml");
    std::fs::write(&object, "[jsonrpc]\nv1_error = \"object\"\n").unwrap();
    let srv = Server::start(&[
        "--config",
        object.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let reply = exchange(srv.addr, b"{\"method\":\"nope\",\"params\":[],\"id\":1}\n");
    assert_eq!(
        json(&reply),
        serde_json::json!({"result":null,"error":{"code":-32601,"message":"Method not found: nope"},"id":1})
    );
    drop(srv);
    let text = dir.join("string.toml");
    std::fs::write(&text, "[jsonrpc]\nv1_error = \"string\"\n").unwrap();
    let srv = Server::start(&[
        "--config",
        text.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let (_, _, body) = http_post(srv.addr, None, br#"{"method":"nope","params":[],"id":1}"#);
    assert_eq!(
        json(&body),
        serde_json::json!({"result":null,"error":"Method not found: nope (code -32601)","id":1})
    );
    // 2.0 keeps its object whatever the setting.
    let (_, _, body) = http_post(
        srv.addr,
        None,
        br#"{"jsonrpc":"2.0","method":"nope","id":1}"#,
    );
    assert_eq!(json(&body)["error"]["code"], -32601);
}
