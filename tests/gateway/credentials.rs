//! Upstreams that want credentials (docs/gateway.md, "Credentials"): supervisord with
//! `[inet_http_server] username/password` (a real third-party server, HTTP Basic) with
//! the password in the `--upstream` URL and in a `password_file`, rotated and wrong; and
//! a bearer token against tests/gateway/token_upstream.py, which also tells the caller's
//! name rpcmux sent in `principal_header`. The secrets show nowhere: not in the log,
//! `/metrics`, an error or `rpc.discover`.

use crate::common::pki::{Pki, CLIENT_CN};
use crate::common::{exchange, parse_http, Server};
use crate::support::{client, config_file, temp_dir, PyUpstream, Supervisord};
use rpcmux::client::{Client, ClientProto, ConnectOpts, TlsOpts};
use rpcmux::codes::ERR_UPSTREAM_BAD_REPLY;
use rpcmux::{Params, RpcError, Value};
use std::time::{Duration, Instant};

async fn call(srv: &Server, proto: ClientProto, method: &str) -> Result<Value, RpcError> {
    client(proto, srv.addr)
        .await
        .call(method, Params::Positional(vec![]))
        .await
        .unwrap_or_else(|e| panic!("{proto} {method}: no reply: {e}"))
}

/// `GET /metrics` on the RPC port (classic text).
fn metrics(srv: &Server) -> String {
    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (status, _, body) = parse_http(&exchange(srv.addr, req.as_bytes()));
    assert_eq!(status, 200);
    String::from_utf8(body).unwrap()
}

/// `rpcmux serve` with `args` that must fail at startup: its `rpcmux: ...` line, and
/// all it wrote to stderr.
fn failed_start(args: &[&str]) -> (String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-demo"])
        .args(args)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("rpcmux: "))
        .unwrap_or_else(|| panic!("{err}"))
        .to_owned();
    (line, err)
}

fn state_code(state: &Value) -> Option<&Value> {
    state.get("statecode")
}

/// The password in the URL, percent-encoded (`@` and `:` in it), from the command line;
/// once with a prefix and once without (the upstream then named by its URL, shown
/// without the credentials).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervisord_with_the_password_in_the_url() {
    let sv = Supervisord::start_with(Some(("admin", "S3cr3t@pw:x")));
    let shown = format!("xmlrpc+http://127.0.0.1:{}/RPC2", sv.port);
    let url = format!(
        "xmlrpc+http://admin:S3cr3t%40pw%3Ax@127.0.0.1:{}/RPC2",
        sv.port
    );
    let prefixed = format!("sv={url}");
    let srv = Server::start(&["--no-demo", "--upstream", &prefixed, "--upstream", &url]);
    for proto in [
        ClientProto::Jsonrpc,
        ClientProto::Xmlrpc,
        ClientProto::Msgpack,
    ] {
        for verb in ["sv.supervisor.getState", "supervisor.getState"] {
            let state = call(&srv, proto, verb).await.unwrap();
            assert_eq!(state_code(&state), Some(&Value::Int(1)), "{proto} {verb}");
        }
    }
    // Named in the log and /metrics by its prefix, or its URL without the credentials.
    assert!(srv.wait_log("upstream verbs registered", Duration::from_secs(5)));
    let log = srv.log();
    assert!(log.contains("upstream=sv "), "{log}");
    assert!(log.contains(&format!("upstream={shown} ")), "{log}");
    let m = metrics(&srv);
    assert!(
        m.contains(&format!(
            "rpcmux_upstream_address_up{{upstream=\"sv\",address=\"{shown}\"}} 1"
        )),
        "{m}"
    );
    assert!(
        m.contains(&format!("upstream=\"{shown}\",address=\"{shown}\"")),
        "{m}"
    );
    let discover = format!(
        "{:?}",
        call(&srv, ClientProto::Jsonrpc, "rpc.discover").await
    );
    for text in [&log, &m, &discover] {
        for secret in ["S3cr3t", "admin:", "%40pw"] {
            assert!(!text.contains(secret), "{secret} in:\n{text}");
        }
    }
}

/// `username` and `password_file` in a config file; the file read again on SIGHUP: a
/// wrong password makes calls fail with a clear error (and the refresh fail, verbs
/// kept), the right one again brings them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervisord_with_a_password_file_rotated_on_sighup() {
    let sv = Supervisord::start_with(Some(("admin", "Rotat3d-pw")));
    let pw = temp_dir("password").join("supervisord.pw");
    std::fs::write(&pw, "Rotat3d-pw\n").unwrap();
    let conf = config_file(&format!(
        "[[upstream]]\nurl = \"xmlrpc+http://127.0.0.1:{}/RPC2\"\nprefix = \"sv\"\n\
         username = \"admin\"\npassword_file = {:?}\n",
        sv.port, pw
    ));
    let srv = Server::start(&[
        "--config",
        conf.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--no-demo",
    ]);
    let state = call(&srv, ClientProto::Msgpack, "sv.supervisor.getState").await;
    assert_eq!(state_code(&state.unwrap()), Some(&Value::Int(1)));

    std::fs::write(&pw, "Wrong-pw-1\n").unwrap();
    srv.sighup();
    assert!(
        srv.wait_log("upstream refresh failed", Duration::from_secs(10)),
        "{}",
        srv.log()
    );
    let refused = format!(
        "upstream sv (xmlrpc+http://127.0.0.1:{}/RPC2) refused our credentials (HTTP 401 Unauthorized)",
        sv.port
    );
    assert!(srv.log().contains(&refused), "{}", srv.log());
    for proto in [
        ClientProto::Jsonrpc,
        ClientProto::Xmlrpc,
        ClientProto::Msgpack,
        ClientProto::Stomp,
    ] {
        let e = call(&srv, proto, "sv.supervisor.getState")
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ERR_UPSTREAM_BAD_REPLY, refused.as_str()),
            "{proto}"
        );
    }

    std::fs::write(&pw, "Rotat3d-pw").unwrap();
    srv.sighup();
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match call(&srv, ClientProto::Jsonrpc, "sv.supervisor.getState").await {
            Ok(state) => {
                assert_eq!(state_code(&state), Some(&Value::Int(1)));
                break;
            }
            Err(e) => assert!(Instant::now() < end, "still {e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = srv.log();
    assert!(
        !log.contains("Rotat3d") && !log.contains("Wrong-pw"),
        "{log}"
    );
}

/// A wrong password, or none, for an upstream that wants one: rpcmux does not start,
/// and says which upstream refused and why, without the password. A `methods` list is
/// no fallback here: the setting is what needs fixing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervisord_refusing_stops_the_startup_with_a_clear_message() {
    let sv = Supervisord::start_with(Some(("admin", "Right-pw")));
    let shown = format!("xmlrpc+http://127.0.0.1:{}/RPC2", sv.port);
    let wrong = format!("sv=xmlrpc+http://admin:Wr0ng-pw@127.0.0.1:{}/RPC2", sv.port);
    let (line, err) = failed_start(&["--upstream", &wrong]);
    assert!(
        line.starts_with(&format!(
            "rpcmux: upstream sv ({shown}) refused our credentials (HTTP 401 Unauthorized)"
        )),
        "{line}"
    );
    assert!(!err.contains("Wr0ng"), "{err}");

    let (line, _) = failed_start(&["--upstream", &format!("sv={shown}")]);
    assert!(
        line.starts_with(&format!(
            "rpcmux: upstream sv ({shown}) asks for credentials (HTTP 401 Unauthorized): set username and password"
        )),
        "{line}"
    );
    // Without a prefix the upstream is named by its URL, once.
    let (line, _) = failed_start(&["--upstream", &shown]);
    assert!(
        line.starts_with(&format!(
            "rpcmux: upstream {shown} asks for credentials (HTTP 401 Unauthorized): set username and password"
        )),
        "{line}"
    );

    let conf = config_file(&format!(
        "[[upstream]]\nurl = \"{shown}\"\nprefix = \"sv\"\nusername = \"admin\"\n\
         password = \"Wr0ng-pw\"\nmethods = [\"supervisor.getState\"]\n"
    ));
    let (line, err) = failed_start(&["--config", conf.to_str().unwrap()]);
    assert!(line.contains("refused our credentials (HTTP 401"), "{line}");
    assert!(!err.contains("Wr0ng"), "{err}");

    // Credentials both ways: a config error naming the upstream, not the password.
    let conf = config_file(&format!(
        "[[upstream]]\nurl = \"xmlrpc+http://admin:Wr0ng-pw@127.0.0.1:{}/RPC2\"\nprefix = \"sv\"\n\
         username = \"admin\"\npassword = \"Wr0ng-pw\"\n",
        sv.port
    ));
    let (line, err) = failed_start(&["--config", conf.to_str().unwrap()]);
    assert!(
        line.contains("upstream sv: credentials both in a url and in"),
        "{line}"
    );
    assert!(!err.contains("Wr0ng"), "{err}");
}

/// A bearer token from `token_file`; the caller's verified TLS client name sent in
/// `principal_header`, and nothing for an anonymous caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_and_the_callers_name() {
    let token = "tok-3xyz.Q";
    let py = PyUpstream::with_token(token);
    let tok = temp_dir("token").join("upstream.token");
    std::fs::write(&tok, format!("{token}\n")).unwrap();
    let conf = config_file(&format!(
        "[[upstream]]\nurl = \"{}\"\nprefix = \"tk\"\ntoken_file = {:?}\n\
         principal_header = \"X-Rpcmux-Principal\"\n",
        py.url(),
        tok
    ));
    let pki = Pki::new();
    let mut args: Vec<String> = vec![
        "--config".into(),
        conf.to_str().unwrap().into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--no-demo".into(),
    ];
    args.extend(pki.server_flags());
    args.extend([
        "--tls".into(),
        "optional".into(),
        "--tls-client-ca".into(),
        pki.path("ca.pem"),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = Server::start(&args);

    let c = client(ClientProto::Msgpack, srv.addr).await;
    let sum = c
        .call("tk.add", Params::Positional(vec![2.into(), 3.into()]))
        .await
        .unwrap();
    assert_eq!(sum, Ok(Value::Int(5)));
    assert_eq!(
        call(&srv, ClientProto::Jsonrpc, "tk.principal").await,
        Ok(Value::Nil)
    );

    let opts = ConnectOpts {
        timeout: Duration::from_secs(20),
        tls: Some(TlsOpts {
            ca: pki.path("ca.pem").into(),
            client_cert: Some((pki.path("client.pem").into(), pki.path("client.key").into())),
            server_name: None,
        }),
        ..ConnectOpts::default()
    };
    for proto in [ClientProto::Jsonrpc, ClientProto::Msgpack] {
        let c = Client::connect(proto, &srv.addr.to_string(), opts.clone())
            .await
            .unwrap();
        let who = c
            .call("tk.principal", Params::Positional(vec![]))
            .await
            .unwrap();
        assert_eq!(who, Ok(Value::from(CLIENT_CN)), "{proto}");
    }
    let log = srv.log();
    assert!(!log.contains(token), "{log}");

    // A wrong token: refused at startup, the token not shown.
    let bad = config_file(&format!(
        "[[upstream]]\nurl = \"{}\"\nprefix = \"tk\"\ntoken = \"not-{token}\"\n",
        py.url()
    ));
    let (line, err) = failed_start(&["--config", bad.to_str().unwrap()]);
    assert!(
        line.starts_with(&format!(
            "rpcmux: upstream tk ({}) refused our credentials (HTTP 401 Unauthorized)",
            py.url()
        )),
        "{line}"
    );
    assert!(!err.contains(token), "{err}");
}

/// A malformed `--upstream` holding a password is a usage error (exit 2) that shows the
/// URL without it: clap would echo the whole value, so the flag is parsed after clap.
#[test]
fn a_malformed_upstream_flag_never_echoes_its_password() {
    for spec in [
        "sv=xmlrpc+htp://admin:Wr0ng-pw@127.0.0.1:1/RPC2",
        "xmlrpc+http://admin:Wr0ng-pw@127.0.0.1:1/RPC2,bogus",
        "bad prefix=xmlrpc+http://admin:Wr0ng-pw@127.0.0.1:1/RPC2",
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
            .args(["serve", "--listen", "127.0.0.1:0", "--upstream", spec])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains("--upstream"), "{spec}: {err}");
        assert!(!err.contains("Wr0ng"), "{spec}: {err}");
    }
}
