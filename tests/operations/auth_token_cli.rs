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

/// Issue 39 (smaller): `--ttl 0` is refused, a `--sub` not in the file is warned
/// about (the token is still printed), and a `uid:N` sub is refused (only the kernel
/// names local users; the server refuses such tokens too).
#[test]
fn token_refuses_a_zero_ttl_and_a_uid_and_warns_of_a_stranger() {
    let dir = crate::auth::scratch("token-cli");
    std::fs::write(dir.join("jwt.hex"), "ab".repeat(32)).unwrap();
    let creds = dir.join("creds.toml");
    std::fs::write(
        &creds,
        "[users.alice]\nallow = [\"echo\"]\n[jwt]\nhs256_secret_file = \"jwt.hex\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rpcmux"))
            .args(["token", "--auth", creds.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    let zero = run(&["--sub", "alice", "--ttl", "0"]);
    assert_eq!(zero.status.code(), Some(2), "{zero:?}");
    assert!(zero.stdout.is_empty(), "{zero:?}");
    let uid = run(&["--sub", "uid:0"]);
    assert_eq!(uid.status.code(), Some(2), "{uid:?}");
    assert!(
        String::from_utf8_lossy(&uid.stderr).contains("uid:N"),
        "{uid:?}"
    );
    let stranger = run(&["--sub", "alcie"]);
    assert!(stranger.status.success(), "{stranger:?}");
    let warning = String::from_utf8_lossy(&stranger.stderr);
    assert!(
        warning.contains("warning") && warning.contains("alcie"),
        "{warning}"
    );
    let known = run(&["--sub", "alice"]);
    assert!(
        known.status.success() && known.stderr.is_empty(),
        "{known:?}"
    );
}

/// Issue 39 (smaller): on a terminal `rpcmux passwd` reads the password twice without
/// echoing it, and prints nothing when the two differ (a pty, driven by Python's `pty`).
#[test]
fn passwd_on_a_terminal_reads_twice_without_echo() {
    let script = r#"
import os, pty, sys, time
def run(first, second):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.argv[1], [sys.argv[1], "passwd"])
    out = b""
    for line in (first, second):
        while b":" not in out.split(b"\n")[-1]:
            out += os.read(fd, 1024)
        os.write(fd, line + b"\n")
        out += b"\n"
    while True:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")
code, out = run(b"s3cret-typed", b"s3cret-typed")
assert code == 0, (code, out)
assert "s3cret-typed" not in out, out
assert "$argon2id$" in out, out
assert out.count("password") == 2, out
code, out = run(b"s3cret-typed", b"s3cret-typo")
assert code == 2, (code, out)
assert "$argon2id$" not in out and "differ" in out, out
print("ok")
"#;
    let out = Command::new("python3")
        .args(["-c", script, env!("CARGO_BIN_EXE_rpcmux")])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
