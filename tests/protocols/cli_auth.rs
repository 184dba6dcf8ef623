//! `rpcmux call` with credentials against `rpcmux serve --auth`, over every protocol:
//! refused without them, with a wrong password and with a token signed by another key;
//! answered with a password (`--password-file`, `RPCMUX_PASSWORD`) and with a token
//! (`--token-file`, `RPCMUX_TOKEN`) minted outside rpcmux (scripts/mint-jwt: Python's
//! HMAC). No secret ever shows in what the client prints.

use crate::common::{self, Server};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PASSWORD: &str = "wonderland-7";

/// Every protocol of the raw port, and the WebSocket ones (`ClientProto::ALL` and
/// `ClientProto::WEBSOCKET`).
const PROTOS: &[&str] = &[
    "xmlrpc",
    "jsonrpc",
    "jsonrpc-tcp",
    "msgpack",
    "stomp",
    "jsonrpc-ws",
    "stomp-ws",
];

pub(crate) struct Files {
    pub(crate) creds: PathBuf,
    pub(crate) password: PathBuf,
    wrong: PathBuf,
    token: PathBuf,
    forged: PathBuf,
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A token for alice signed with the hex secret in `secret`.
fn mint(secret: &Path) -> String {
    let out = Command::new(common::repo().join("scripts/mint-jwt"))
        .args(["hs256", secret.to_str().unwrap(), "alice"])
        .output()
        .expect("run scripts/mint-jwt");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A credentials file where anonymous callers may call nothing: alice with a password,
/// tokens signed with an HS256 secret; and the files the client reads.
pub(crate) fn files() -> Files {
    let dir = std::env::temp_dir().join(format!("rpcmux-cli-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .arg("passwd")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            writeln!(c.stdin.take().unwrap(), "{PASSWORD}")?;
            c.wait_with_output()
        })
        .expect("rpcmux passwd");
    let hash = String::from_utf8(out.stdout).unwrap();
    let secret = write(&dir, "jwt.hex", &"5a".repeat(32));
    let other = write(&dir, "other.hex", &"a5".repeat(32));
    let creds = write(
        &dir,
        "creds.toml",
        &format!(
            "[users.alice]\npassword = \"{}\"\nallow = [\"*\"]\n[jwt]\nhs256_secret_file = \"{}\"\n",
            hash.trim(),
            secret.display()
        ),
    );
    Files {
        creds,
        password: write(&dir, "password", &format!("{PASSWORD}\n")),
        wrong: write(&dir, "wrong", "not-the-password\n"),
        token: write(&dir, "token", &mint(&secret)),
        forged: write(&dir, "forged", &mint(&other)),
    }
}

/// `rpcmux call --proto PROTO ADDR echo hi` with `flags` and `env` set (and the
/// credential variables cleared otherwise).
fn call(srv: &Server, proto: &str, flags: &[&str], env: &[(&str, &str)]) -> Output {
    let addr = srv.addr.to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rpcmux"));
    cmd.args(["call", "--proto", proto, "--timeout", "20"])
        .args(flags)
        .args([addr.as_str(), "echo", "hi"])
        .env_remove("RPCMUX_PASSWORD")
        .env_remove("RPCMUX_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run rpcmux call")
}

fn answered(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{what}: {err}");
    assert_eq!(common::json(&out.stdout), serde_json::json!("hi"), "{what}");
}

/// Refused: no result printed, a failing exit, and the reason a login refusal gives.
fn refused(out: &Output, what: &str, secrets: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.is_empty(), "{what}: answered {out:?}");
    assert!(matches!(out.status.code(), Some(1 | 2)), "{what}: {out:?}");
    let why = [
        "401",
        "-32020",
        "-32022",
        "authentication required",
        "login failed",
    ];
    assert!(why.iter().any(|w| err.contains(w)), "{what}: {err}");
    assert!(!err.contains("\n\n"), "{what}: an empty line: {err}");
    for s in secrets {
        assert!(!err.contains(s), "{what}: a secret in the output: {err}");
    }
}

#[test]
fn call_logs_in_over_every_protocol_and_is_refused_without() {
    let f = files();
    let token = std::fs::read_to_string(&f.token).unwrap();
    let forged = std::fs::read_to_string(&f.forged).unwrap();
    let secrets = [PASSWORD, "not-the-password", token.trim(), forged.trim()];
    let path = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let (pw, wrong, tok, bad) = (
        path(&f.password),
        path(&f.wrong),
        path(&f.token),
        path(&f.forged),
    );
    for &proto in PROTOS {
        // A server per protocol: the failures asked for here stay below the throttle's
        // free attempts per source address.
        let srv = Server::start(&["--auth", f.creds.to_str().unwrap()]);
        refused(
            &call(&srv, proto, &[], &[]),
            &format!("{proto}, none"),
            &secrets,
        );
        refused(
            &call(
                &srv,
                proto,
                &["--user", "alice", "--password-file", &wrong],
                &[],
            ),
            &format!("{proto}, wrong password"),
            &secrets,
        );
        refused(
            &call(&srv, proto, &["--token-file", &bad], &[]),
            &format!("{proto}, token signed by another key"),
            &secrets,
        );
        answered(
            &call(
                &srv,
                proto,
                &["--user", "alice", "--password-file", &pw],
                &[],
            ),
            &format!("{proto}, --password-file"),
        );
        answered(
            &call(
                &srv,
                proto,
                &["--user", "alice"],
                &[("RPCMUX_PASSWORD", PASSWORD)],
            ),
            &format!("{proto}, RPCMUX_PASSWORD"),
        );
        answered(
            &call(&srv, proto, &["--token-file", &tok], &[]),
            &format!("{proto}, --token-file"),
        );
        answered(
            &call(&srv, proto, &[], &[("RPCMUX_TOKEN", token.trim())]),
            &format!("{proto}, RPCMUX_TOKEN"),
        );
        // The server's log names who failed, never with what.
        let log = srv.log();
        for s in secrets {
            assert!(!log.contains(s), "{proto}: a secret in the server's log");
        }
    }
}

#[test]
fn credentials_on_a_server_without_auth_are_not_needed() {
    let f = files();
    let srv = Server::start(&[]);
    for &proto in PROTOS {
        answered(
            &call(
                &srv,
                proto,
                &[
                    "--user",
                    "alice",
                    "--password-file",
                    f.password.to_str().unwrap(),
                ],
                &[],
            ),
            &format!("{proto}, no --auth"),
        );
    }
}

#[test]
fn a_password_in_the_address_is_refused_unquoted() {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["call", "http://alice:s3cret@127.0.0.1:1/", "echo"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--password-file") && !err.contains("s3cret"),
        "{err}"
    );
}

/// The access log's `identity` is the principal the credentials proved (read when the
/// line is written, not for every call: src/verbs/observed.rs).
#[test]
fn the_access_log_names_the_logged_in_principal() {
    let f = files();
    let srv = Server::start(&["--auth", f.creds.to_str().unwrap(), "--access-log", "info"]);
    let pw = f.password.to_str().unwrap();
    for proto in ["jsonrpc", "msgpack"] {
        answered(
            &call(
                &srv,
                proto,
                &["--user", "alice", "--password-file", pw],
                &[],
            ),
            proto,
        );
    }
    let echo = |log: &str| {
        log.lines()
            .filter(|l| l.contains("rpcmux::access") && l.contains("method=\"echo\""))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while echo(&srv.log()).len() < 2 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let lines = echo(&srv.log());
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines.iter().all(|l| l.contains("identity=\"alice\"")),
        "{lines:#?}"
    );
}
