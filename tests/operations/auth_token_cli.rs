//! `rpcmux token` mints what `[jwt] hs256_secret_file` accepts: curl sends it as
//! `Authorization: Bearer` and the call runs as its `sub` with that user's permissions;
//! a token signed with another secret gets 401 with `error="invalid_token"`.

use crate::common::Server;
use std::path::Path;
use std::process::Command;

fn token(creds: &Path, sub: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["token", "--auth", creds.to_str().unwrap(), "--sub", sub])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// curl's status line and body for one JSON-RPC call with `token` as Bearer.
fn curl(srv: &Server, token: &str, body: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-i", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .args(["-d", body, &format!("http://{}/", srv.addr)])
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = text.lines().next().unwrap_or_default().to_owned();
    (status, text)
}

#[test]
fn minted_tokens_call_as_their_subject() {
    let dir = crate::auth::scratch("token");
    std::fs::write(dir.join("jwt.hex"), "ab".repeat(32)).unwrap();
    std::fs::write(dir.join("other.hex"), "cd".repeat(32)).unwrap();
    let creds = dir.join("creds.toml");
    std::fs::write(
        &creds,
        "anonymous = [\"ping\"]\n[users.alice]\nallow = [\"echo\", \"VM.*\"]\ndeny = [\"VM.destroy\"]\n\
         [jwt]\nhs256_secret_file = \"jwt.hex\"\naudience = \"rpcmux-test\"\n",
    )
    .unwrap();
    let other = dir.join("other.toml");
    std::fs::write(
        &other,
        "[jwt]\nhs256_secret_file = \"other.hex\"\naudience = \"rpcmux-test\"\n",
    )
    .unwrap();
    let srv = Server::start(&["--auth", creds.to_str().unwrap()]);

    let alice = token(&creds, "alice");
    let (status, text) = curl(
        &srv,
        &alice,
        r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["hi"]}"#,
    );
    assert!(status.contains(" 200"), "{text}");
    assert!(text.contains(r#""result":"hi""#), "{text}");
    let (_, text) = curl(
        &srv,
        &alice,
        r#"{"jsonrpc":"2.0","id":2,"method":"VM.destroy","params":["x"]}"#,
    );
    assert!(text.contains("-32021"), "{text}");

    // A subject not in the file has what anonymous has: ping, not echo.
    let mallory = token(&creds, "mallory");
    let (_, text) = curl(
        &srv,
        &mallory,
        r#"{"jsonrpc":"2.0","id":3,"method":"echo","params":["hi"]}"#,
    );
    assert!(text.contains("-32021") || text.contains("-32020"), "{text}");

    let forged = token(&other, "alice");
    let (status, text) = curl(
        &srv,
        &forged,
        r#"{"jsonrpc":"2.0","id":4,"method":"echo","params":["hi"]}"#,
    );
    assert!(status.contains(" 401"), "{text}");
    assert!(text.contains("error=\"invalid_token\""), "{text}");
    assert!(!srv.log().contains(&forged), "the token in the log");
}
