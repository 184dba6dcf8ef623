//! What `--auth` shows an operator: `rpcmux_logins_total` by kind and outcome, refused
//! calls as `rpcmux_calls_handled_total` with code -32020 / -32021 under the verb's
//! registered name (or `unknown`), and never a secret, in the exposition or the log.

use crate::auth::{credentials, scratch};
use crate::common::hostile::{error_code, Lines};
use crate::common::{exchange, http_post, parse_http, Server};
use base64::Engine;

fn metrics(srv: &Server) -> String {
    let req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (status, _, body) = parse_http(&exchange(srv.addr, req));
    assert_eq!(status, 200);
    String::from_utf8(body).unwrap()
}

/// The value of the sample whose line starts with `name{` and holds every label of
/// `labels` (`key="value"` strings), or 0.
fn sample(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn logins_and_denials_are_counted_without_secrets() {
    let creds = credentials(&scratch("metrics"), "");
    let srv = Server::start(&["--auth", creds.to_str().unwrap()]);

    // HTTP Basic with a wrong password: 401, one rejected password login.
    let basic = base64::engine::general_purpose::STANDARD.encode("alice:not-her-password");
    let req = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {basic}\r\nContent-Type: application/json\r\nContent-Length: 40\r\nConnection: close\r\n\r\n{{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}}"
    );
    assert_eq!(parse_http(&exchange(srv.addr, req.as_bytes())).0, 401);

    // Raw TCP: an anonymous call of a verb that does not exist, a login, a forbidden call.
    let mut c = Lines::connect(srv.addr).unwrap();
    let mut call = |line: &str| {
        c.send(format!("{line}\n").as_bytes()).unwrap();
        c.json(1 << 20).unwrap()
    };
    let r = call(r#"{"jsonrpc":"2.0","id":1,"method":"no.such.verb"}"#);
    assert_eq!(error_code(&r), Some(-32020), "{r}");
    let r = call(
        r#"{"jsonrpc":"2.0","id":2,"method":"rpc.login","params":{"user":"alice","password":"wonderland"}}"#,
    );
    assert_eq!(r["result"]["principal"], "alice", "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":3,"method":"VM.destroy","params":["x"]}"#);
    assert_eq!(error_code(&r), Some(-32021), "{r}");
    // Anonymous over HTTP: ping is allowed, VM.list is not.
    let (_, _, ok) = http_post(
        srv.addr,
        None,
        br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
    );
    assert!(String::from_utf8_lossy(&ok).contains("true"));

    let text = metrics(&srv);
    let logins = "rpcmux_logins_total";
    assert_eq!(
        sample(
            &text,
            logins,
            &[r#"via="password""#, r#"outcome="rejected""#]
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, logins, &[r#"via="password""#, r#"outcome="ok""#]),
        1.0,
        "{text}"
    );
    let handled = "rpcmux_calls_handled_total";
    assert_eq!(
        sample(
            &text,
            handled,
            &[r#"method="VM.destroy""#, r#"code="-32021""#]
        ),
        1.0,
        "{text}"
    );
    // What the client asked for is never a label: an unknown name counts as `unknown`.
    assert_eq!(
        sample(&text, handled, &[r#"method="unknown""#, r#"code="-32020""#]),
        1.0,
        "{text}"
    );
    assert!(!text.contains("no.such.verb"), "{text}");
    for secret in ["wonderland", "not-her-password", &basic] {
        assert!(!text.contains(secret), "a secret in /metrics: {secret}");
        assert!(!srv.log().contains(secret), "a secret in the log: {secret}");
    }
}

/// Issue 39 (smaller): a Bearer token on a keep-alive connection is verified once, as a
/// Basic password is: ten requests, one token login counted.
#[test]
fn a_bearer_token_is_verified_once_per_keep_alive_connection() {
    use crate::common::hostile::{dial, read_response, ANSWER_TIMEOUT};
    use std::io::Write;
    let dir = scratch("bearer-memo");
    std::fs::write(dir.join("jwt.hex"), "ab".repeat(32)).unwrap();
    let creds = credentials(&dir, "[jwt]\nhs256_secret_file = \"jwt.hex\"\n");
    let srv = Server::start(&["--auth", creds.to_str().unwrap()]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["token", "--auth", creds.to_str().unwrap(), "--sub", "alice"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["x"]}"#;
    let mut keep = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    for _ in 0..10 {
        let mut req = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        keep.write_all(&req).unwrap();
        let r = read_response(&mut keep, 1 << 16).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let text = metrics(&srv);
    let ok = sample(
        &text,
        "rpcmux_logins_total",
        &["via=\"token\"", "outcome=\"ok\""],
    );
    assert_eq!(ok, 1.0, "{text}");
}
