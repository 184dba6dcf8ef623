//! `--auth` with JWTs minted by PyJWT, an implementation independent of the server's
//! (jsonwebtoken): for each kind of key `[jwt]` takes, a key made fresh by
//! tests/python/jwt_keys.py, a server checking with it, and tests/python/jwt_tokens.py
//! presenting valid and invalid tokens over JSON-RPC/HTTP, XML-RPC and STOMP.

use super::auth::{credentials, scratch};
use crate::common::{run_py, Server};

/// The keys' directory, removed with the test (it holds a private key).
pub(crate) struct KeyDir(pub(crate) std::path::PathBuf);

impl Drop for KeyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server whose `[jwt]` checks a fresh `kind` key (audience, issuer and a 60 s
/// leeway set, so each is checked), with `root` (anything, no password) beside alice.
pub(crate) fn token_server(kind: &str) -> (Server, KeyDir) {
    let dir = KeyDir(scratch(&format!("jwt-{kind}")));
    let key_line = run_py("jwt_keys.py", &[dir.0.to_str().unwrap(), kind]);
    let more = format!(
        r#"[users.root]
allow = ["*"]
[jwt]
{}
audience = "rpcmux-tests"
issuer = "https://issuer.test"
leeway = 60
"#,
        key_line.trim()
    );
    let creds = credentials(&dir.0, &more);
    (Server::start(&["--auth", creds.to_str().unwrap()]), dir)
}

fn check(kind: &str) {
    let (srv, dir) = token_server(kind);
    let out = run_py(
        "jwt_tokens.py",
        &[
            "127.0.0.1",
            &srv.addr.port().to_string(),
            kind,
            dir.0.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.trim().lines().last(),
        Some(&*format!("ok {kind}")),
        "{out}"
    );
}

#[test]
fn hs256_tokens_from_pyjwt() {
    check("hs256");
}

#[test]
fn rs256_tokens_from_pyjwt() {
    check("rs256");
}

#[test]
fn es256_tokens_from_pyjwt() {
    check("es256");
}

#[test]
fn eddsa_tokens_from_pyjwt() {
    check("eddsa");
}

/// Issue 39, finding 8: with no `audience` in `[jwt]`, a token that carries an `aud`
/// (made for some other service) is refused over Bearer and `rpc.login`; one without
/// is served. Tokens by PyJWT (tests/python/jwt_aud.py).
#[test]
fn tokens_for_another_audience_are_refused_when_none_is_configured() {
    let dir = KeyDir(scratch("jwt-aud"));
    let secret = "5ecd7e4a4d0c6f2a9be1c3a7f10d2e4b8a6c0f1e2d3c4b5a69788796a5b4c3d2";
    std::fs::write(dir.0.join("jwt.hex"), secret).unwrap();
    let more = "[users.root]\nallow = [\"*\"]\n[jwt]\nhs256_secret_file = \"jwt.hex\"\n";
    let creds = credentials(&dir.0, more);
    let srv = Server::start(&["--auth", creds.to_str().unwrap()]);
    let out = run_py(
        "jwt_aud.py",
        &["127.0.0.1", &srv.addr.port().to_string(), secret],
    );
    assert_eq!(out.trim().lines().last(), Some("ok"), "{out}");
}
