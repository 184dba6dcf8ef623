//! `rpcmux call` and `rpcmux bench` against the real server, over every protocol the
//! client speaks: results, error replies (exit 1), no reply (exit 2), named and
//! positional params, params from stdin, and short bench runs that must be error-free.

use crate::common;
use crate::common::pki;
use crate::common::Server;
use std::io::Write;
use std::process::Output;

/// Every protocol the client and the server both speak.
const PROTOS: &[&str] = &[
    "xmlrpc",
    "jsonrpc",
    "jsonrpc-tcp",
    "msgpack",
    "stomp",
    "jsonrpc-ws",
    "stomp-ws",
];
/// Those that carry params by name.
const NAMED: &[&str] = &["jsonrpc", "jsonrpc-tcp", "stomp", "jsonrpc-ws", "stomp-ws"];

/// HTTP/1.1 carries one call at a time per connection: no pipelining.
fn is_http(proto: &str) -> bool {
    matches!(proto, "xmlrpc" | "jsonrpc")
}

use common::run_rpcmux as rpcmux;

fn call(srv: &Server, proto: &str, rest: &[&str]) -> Output {
    let addr = srv.addr.to_string();
    let mut args = vec!["call", "--proto", proto, "--timeout", "20", &addr];
    args.extend_from_slice(rest);
    rpcmux(&args, None)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The JSON result a successful call printed.
fn result(out: &Output, what: &str) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: stdout {:?} stderr {:?}",
        text(&out.stdout),
        text(&out.stderr)
    );
    common::json(&out.stdout)
}

#[test]
fn call_prints_results_over_every_protocol() {
    let srv = Server::start(&[]);
    for &p in PROTOS {
        let out = call(&srv, p, &["echo", "hello"]);
        assert_eq!(result(&out, p), serde_json::json!("hello"), "{p}");
        let out = call(&srv, p, &["echo", "5"]);
        assert_eq!(result(&out, p), serde_json::json!(5), "{p}");
        let out = call(&srv, p, &["echo", r#"{"a":[1,true,null],"b":"x"}"#]);
        assert_eq!(
            result(&out, p),
            serde_json::json!({"a": [1, true, null], "b": "x"}),
            "{p}"
        );
        // Pretty-printed: one member per line.
        assert!(text(&out.stdout).contains("\n  \"b\": \"x\""), "{p}");
        let id = format!("pos-{p}");
        let out = call(&srv, p, &["VM.create", &id, "name", "512"]);
        assert_eq!(result(&out, p)["memSize"], 512, "{p}");
    }
}

#[test]
fn call_named_params_and_params_from_stdin() {
    let srv = Server::start(&[]);
    let addr = srv.addr.to_string();
    for &p in NAMED {
        let id = format!("vm-{p}");
        let vm = format!("vmID={id}");
        let out = call(&srv, p, &["VM.create", &vm, "name=b", "memSize=1024"]);
        let r = result(&out, p);
        assert_eq!(
            (r["vmId"].as_str(), r["memSize"].as_i64()),
            (Some(&*id), Some(1024))
        );
        let body = format!(r#"{{"vmID": "{id}"}}"#);
        let out = rpcmux(
            &["call", "--proto", p, "-f", "-", &addr, "VM.getStats"],
            Some(&body),
        );
        assert_eq!(result(&out, p)["vmName"], "b", "{p}");
    }
    for &p in PROTOS {
        let out = rpcmux(
            &["call", "--proto", p, "-f", "-", &addr, "echo"],
            Some(r#"[["x", 2.5]]"#),
        );
        assert_eq!(result(&out, p), serde_json::json!(["x", 2.5]), "{p}");
    }
}

#[test]
fn error_reply_exits_1_with_the_message() {
    let srv = Server::start(&[]);
    for &p in PROTOS {
        let out = call(&srv, p, &["no.such.verb"]);
        assert_eq!(out.status.code(), Some(1), "{p}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{p}");
        let err = text(&out.stderr);
        assert!(err.starts_with("error -32601: "), "{p}: {err}");
        assert!(err.contains("no.such.verb"), "{p}: {err}");
        // A domain error keeps its own code.
        let out = call(&srv, p, &["VM.getStats", "missing"]);
        assert_eq!(out.status.code(), Some(1), "{p}");
        assert!(
            text(&out.stderr).starts_with("error 1: "),
            "{p}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn no_reply_exits_2() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("127.0.0.1:{port}");
    for &p in PROTOS {
        let out = rpcmux(&["call", "--proto", p, &dead, "ping"], None);
        assert_eq!(out.status.code(), Some(2), "{p}");
        assert!(
            text(&out.stderr).contains("cannot connect"),
            "{p}: {}",
            text(&out.stderr)
        );
    }
    let srv = Server::start(&[]);
    let addr = srv.addr.to_string();
    for &p in PROTOS {
        let out = rpcmux(
            &[
                "call",
                "--proto",
                p,
                "--timeout",
                "0.3",
                &addr,
                "sleep",
                "3000",
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{p}");
        assert!(
            text(&out.stderr).contains("no reply within"),
            "{p}: {}",
            text(&out.stderr)
        );
    }
    // Mixing positional and named params is a usage error, not a call.
    let out = call(&srv, "jsonrpc", &["VM.create", "a", "name=b"]);
    assert_eq!(out.status.code(), Some(2));
}

fn bench_json(srv: &Server, proto: &str, extra: &[&str]) -> serde_json::Value {
    let addr = srv.addr.to_string();
    let mut args = vec![
        "bench",
        "--proto",
        proto,
        "--duration",
        "1",
        "--warmup",
        "0.2",
        "--json",
        "-q",
    ];
    args.extend_from_slice(extra);
    args.push(&addr);
    let out = rpcmux(&args, None);
    assert_eq!(out.status.code(), Some(0), "{proto}: {}", text(&out.stderr));
    common::json(&out.stdout)
}

#[test]
fn short_bench_per_protocol_is_error_free() {
    let srv = Server::start(&[]);
    for &p in PROTOS {
        let pipe: &[&str] = if is_http(p) {
            &["--connections", "2"]
        } else {
            &["--connections", "2", "--pipeline", "4"]
        };
        for payload in ["ping", "musicentry"] {
            let mut extra = pipe.to_vec();
            extra.extend(["--payload", payload]);
            let r = bench_json(&srv, p, &extra);
            let what = format!("{p} {payload}: {r}");
            assert!(r["calls"].as_u64().unwrap() > 0, "{what}");
            assert!(r["calls_per_sec"].as_f64().unwrap() > 0.0, "{what}");
            assert_eq!(r["errors"], 0, "{what}");
            assert_eq!(r["proto"], p);
            let lat = &r["latency_ms"];
            assert!(lat["p50"].as_f64().unwrap() > 0.0, "{what}");
            assert!(lat["p50"].as_f64() <= lat["p99"].as_f64(), "{what}");
            assert!(lat["p99"].as_f64() <= lat["max"].as_f64(), "{what}");
        }
    }
}

#[test]
fn bench_counts_error_replies_and_wrong_results() {
    let srv = Server::start(&[]);
    let dir = std::env::temp_dir().join(format!("rpcmux-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // An unknown method: every call is an error reply.
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"jsonrpc":"2.0","method":"no.such","params":[],"id":1}"#,
    )
    .unwrap();
    let r = bench_json(&srv, "jsonrpc-tcp", &["--payload", bad.to_str().unwrap()]);
    assert!(r["errors"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["errors"], r["calls"], "{r}");
    assert_eq!(r["error_replies"], r["calls"], "{r}");
    assert!(r["first_error"].as_str().unwrap().contains("-32601"), "{r}");
    // A call with no expected result counts any result as fine.
    let any = dir.join("any.json");
    std::fs::write(&any, r#"{"method":"sleep","params":[0]}"#).unwrap();
    let r = bench_json(&srv, "stomp", &["--payload", any.to_str().unwrap()]);
    assert_eq!(r["errors"], 0, "sleep has no expected result: {r}");
    let echo = dir.join("echo.json");
    std::fs::write(&echo, r#"[1, {"k": "v"}]"#).unwrap();
    let r = bench_json(&srv, "jsonrpc", &["--payload", echo.to_str().unwrap()]);
    assert_eq!(r["errors"], 0, "{r}");
    assert_eq!(r["payload"], "echo.json");
    // Pipelining over HTTP/1.1 is refused before the run.
    let out = rpcmux(
        &[
            "bench",
            "--proto",
            "jsonrpc",
            "--pipeline",
            "4",
            "-d",
            "1",
            &srv.addr.to_string(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_csv_has_a_header_and_one_row() {
    let srv = Server::start(&[]);
    let addr = srv.addr.to_string();
    let out = rpcmux(
        &[
            "bench",
            "--proto",
            "jsonrpc-tcp",
            "-d",
            "1",
            "--warmup",
            "0",
            "--csv",
            &addr,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
    assert!(lines[0].starts_with("proto,addr,payload,"));
    assert!(lines[1].starts_with("jsonrpc-tcp,"));
    // The progress lines went to stderr, once a second.
    assert!(
        text(&out.stderr).contains("calls/s"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bench_labels_the_warmup_seconds() {
    let srv = Server::start(&[]);
    let addr = srv.addr.to_string();
    let out = rpcmux(&["bench", "-d", "1", "--warmup", "1", &addr], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "one line per second: {stderr}");
    assert!(lines[0].ends_with("(warmup)"), "{stderr}");
    assert!(!lines[1].contains("warmup"), "{stderr}");
}

/// `rpcmux bench` of echo(1), which expects 1 back, over JSON-RPC on TCP: one connection
/// with 2 calls in flight for 300 ms. Its JSON summary; the run must succeed.
fn bench_echo_one(addr: &str, check_bytes: bool) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("rpcmux-bench-one-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A JSON value that is not a request object is echoed, and must come back.
    let one = dir.join(format!("one-{check_bytes}.json"));
    std::fs::write(&one, "1").unwrap();
    let mut args = vec!["bench", "--proto", "jsonrpc-tcp", "-c", "1", "-p", "2"];
    args.extend(["-d", "0.3", "--warmup", "0", "--json", "-q"]);
    args.extend(["--payload", one.to_str().unwrap()]);
    if check_bytes {
        args.push("--check-bytes");
    }
    args.push(addr);
    let out = rpcmux(&args, None);
    let _ = std::fs::remove_file(&one);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    common::json(&out.stdout)
}

#[test]
fn bench_counts_a_wrong_result_as_an_error() {
    // The expected result is what the payload implies (echo(1) must give 1), so the
    // wrong one comes from a server that answers 2 to every call.
    let r = bench_echo_one(&turning_server(0).to_string(), false);
    let calls = r["calls"].as_u64().unwrap();
    assert!(calls > 0, "{r}");
    assert_eq!(r["wrong_results"], calls, "{r}");
    assert_eq!(r["errors"], calls, "{r}");
    assert!(
        r["first_error"]
            .as_str()
            .unwrap()
            .starts_with("wrong result: 2"),
        "{r}"
    );
}

/// A JSON-RPC-over-TCP server whose first `right` answers have result 1 and every later
/// one result 2: the same bytes (ids aside), then different ones.
fn turning_server(right: usize) -> std::net::SocketAddr {
    use std::io::BufRead;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let Some(Ok(s)) = l.incoming().next() else {
            return;
        };
        // Each reply on its own: no wait for the client's ACK (Nagle).
        s.set_nodelay(true).unwrap();
        let mut w = s.try_clone().unwrap();
        for (n, line) in std::io::BufReader::new(s)
            .lines()
            .map_while(Result::ok)
            .enumerate()
        {
            let req: serde_json::Value = serde_json::from_str(&line).unwrap();
            let result = if n < right { 1 } else { 2 };
            let reply = serde_json::json!({"jsonrpc": "2.0", "id": req["id"], "result": result});
            if writeln!(w, "{reply}").is_err() {
                break;
            }
        }
    });
    addr
}

#[test]
fn bench_check_bytes_still_counts_a_wrong_result_after_right_ones() {
    const RIGHT: u64 = 20;
    let r = bench_echo_one(&turning_server(RIGHT as usize).to_string(), true);
    // The first two answers are decoded (the second is learnt), the next 18 are taken by
    // their bytes, and every one after them differs, so it is decoded and judged wrong.
    let calls = r["calls"].as_u64().unwrap();
    assert!(calls > RIGHT, "{r}");
    assert_eq!(r["wrong_results"], calls - RIGHT, "{r}");
    assert_eq!(r["errors"], r["wrong_results"], "{r}");
}

#[test]
fn bench_check_bytes_against_the_server_and_a_bare_echo() {
    let srv = Server::start(&[]);
    let server = srv.addr.to_string();
    let echo = echo_server().to_string();
    for p in ["jsonrpc-tcp", "msgpack", "stomp"] {
        for (addr, extra) in [(&server, None), (&echo, Some("--echo-server"))] {
            let mut flags = vec!["--check-bytes"];
            flags.extend(extra);
            let r = short_bench(p, &flags, addr);
            assert!(r["calls"].as_u64().unwrap() > 0, "{p} {extra:?}: {r}");
            assert_eq!(r["errors"], 0, "{p} {extra:?}: {r}");
        }
    }
}

/// `rpcmux bench` of `proto` with `flags`: 2 connections x 4 calls in flight of
/// echo(MusicEntry) for 1 s. Its JSON summary; the run must succeed.
fn short_bench(proto: &str, flags: &[&str], addr: &str) -> serde_json::Value {
    let mut args = vec!["bench", "--proto", proto, "-c", "2", "-p", "4", "-d", "1"];
    args.extend(["--warmup", "0", "--payload", "musicentry", "--json", "-q"]);
    args.extend_from_slice(flags);
    args.push(addr);
    let out = rpcmux(&args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{proto} {flags:?}: {}",
        text(&out.stderr)
    );
    common::json(&out.stdout)
}

/// A bare byte echo on a thread per connection: what `--echo-server` is for.
fn echo_server() -> std::net::SocketAddr {
    use std::io::Read;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in l.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = s.read(&mut buf) {
                    if s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn bench_echo_server_mode_replays_request_bytes() {
    let addr = echo_server().to_string();
    for p in ["jsonrpc-tcp", "msgpack", "stomp"] {
        let r = short_bench(p, &["--echo-server"], &addr);
        assert!(r["calls"].as_u64().unwrap() > 0, "{p}: {r}");
        assert_eq!(r["errors"], 0, "{p}: {r}");
    }
    // HTTP has no raw form to replay.
    let out = rpcmux(
        &[
            "bench",
            "--proto",
            "jsonrpc",
            "--echo-server",
            "-d",
            "1",
            &addr,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn call_and_bench_over_tls_with_and_without_a_client_certificate() {
    let pki = pki::Pki::new();
    let mut args = pki.server_flags();
    args.extend(["--tls", "required", "--tls-client-ca"].map(String::from));
    args.push(pki.path("ca.pem"));
    let srv = Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let addr = srv.addr.to_string();
    let (ca, cert, key) = (
        pki.path("ca.pem"),
        pki.path("client.pem"),
        pki.path("client.key"),
    );
    let mtls = ["--tls-ca", &ca, "--tls-cert", &cert, "--tls-key", &key];
    for &p in PROTOS {
        let mut a = vec!["call", "--proto", p];
        a.extend_from_slice(&mtls);
        a.extend([addr.as_str(), "whoami"]);
        let r = result(&rpcmux(&a, None), p);
        assert_eq!(r["identity"], pki::CLIENT_CN, "{p}: {r}");
        // The server requires a client certificate: without one there is no reply, and
        // the client says what the server's log says.
        let out = rpcmux(
            &["call", "--proto", p, "--tls-ca", &ca, &addr, "ping"],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{p}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("probably the server requires a client certificate"),
            "{p}: {}",
            text(&out.stderr)
        );
        // Plaintext is refused too.
        let out = rpcmux(
            &["call", "--proto", p, "--timeout", "5", &addr, "ping"],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{p}");
        assert!(
            text(&out.stderr).contains("probably the server speaks TLS only"),
            "{p}: {}",
            text(&out.stderr)
        );
        let mut a = vec![
            "bench", "--proto", p, "-d", "1", "--warmup", "0", "--json", "-q",
        ];
        a.extend_from_slice(&mtls);
        a.extend(["--payload", "musicentry", addr.as_str()]);
        let out = rpcmux(&a, None);
        assert_eq!(out.status.code(), Some(0), "{p}: {}", text(&out.stderr));
        let r = common::json(&out.stdout);
        assert!(r["calls"].as_u64().unwrap() > 0, "{p}: {r}");
        assert_eq!(r["errors"], 0, "{p}: {r}");
    }
    // A CA the server's certificate does not chain to: the handshake fails.
    let rogue_ca = pki.path("rogue.pem");
    let out = rpcmux(&["call", "--tls-ca", &rogue_ca, &addr, "ping"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("probably the server's certificate is not signed by a CA in --tls-ca"),
        "{}",
        text(&out.stderr)
    );
    // A client certificate from a CA the server does not trust.
    let (rogue, rogue_key) = (pki.path("rogue.pem"), pki.path("rogue.key"));
    let out = rpcmux(
        &[
            "call",
            "--tls-ca",
            &ca,
            "--tls-cert",
            &rogue,
            "--tls-key",
            &rogue_key,
            &addr,
            "ping",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("probably the server refused the client certificate"),
        "{}",
        text(&out.stderr)
    );
}

/// The mistakes a newcomer makes get an error that says what probably happened, where
/// the bare error ("closed by the server", "tls handshake eof") hid it.
#[test]
fn call_errors_name_their_probable_cause() {
    let pki = pki::Pki::new();
    let ca = pki.path("ca.pem");
    let plain = Server::start(&[]);
    let http_only = Server::start(&["--protocol", "http"]);
    let (plain_addr, http_addr) = (plain.addr.to_string(), http_only.addr.to_string());
    let stderr = |args: &[&str]| {
        let out = rpcmux(args, None);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stderr)
    };
    for &p in PROTOS {
        let e = stderr(&["call", "--proto", p, "--tls-ca", &ca, &plain_addr, "ping"]);
        assert!(
            e.contains("probably the server does not speak TLS"),
            "{p}: {e}"
        );
    }
    for p in ["msgpack", "jsonrpc-tcp", "stomp"] {
        let e = stderr(&["call", "--proto", p, &http_addr, "ping"]);
        assert!(e.contains(&format!("or does not serve {p}")), "{p}: {e}");
    }
    // Nothing listens on a port that was just free.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = stderr(&["call", &format!("127.0.0.1:{port}"), "ping"]);
    assert!(e.contains("probably nothing listens there"), "{e}");
    // Addresses that are not HOST:PORT say which forms are.
    for bad in ["localhost", "localhost:99999", "ftp://localhost:1/"] {
        let e = stderr(&["call", bad, "ping"]);
        assert!(
            e.contains(&format!("`{bad}`")) && e.contains("expected HOST:PORT"),
            "{e}"
        );
    }
    let e = stderr(&["call", &format!("https://{plain_addr}/"), "ping"]);
    assert!(e.contains("add --tls-ca"), "{e}");
    // The URL forms users paste work: ws:// speaks JSON-RPC over WebSocket.
    for url in [
        format!("ws://{plain_addr}/"),
        format!("http://{plain_addr}/RPC2"),
        format!("tcp://{plain_addr}"),
    ] {
        let out = rpcmux(&["call", &url, "echo", "hi"], None);
        assert_eq!(result(&out, &url), serde_json::json!("hi"), "{url}");
    }
    let out = rpcmux(&["call", &format!("ws://{plain_addr}/"), "whoami"], None);
    assert_eq!(result(&out, "ws whoami")["protocol"], "jsonrpc-ws");
    // Arguments guessed as JSON (123 a number): a -32602 adds one line on quoting and -f.
    let out = rpcmux(&["call", &plain_addr, "VM.getStats", "123"], None);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    let lines: Vec<_> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(lines[0].starts_with("error -32602: "), "{e}");
    assert!(
        lines[1].contains(r#"quote a string as '"123"'"#) && lines[1].contains("-f FILE"),
        "{e}"
    );
    // A -32602 the guessing cannot explain: a number out of range, a plain word where a
    // number is wanted. No hint.
    for args in [["sleep", "70000"], ["sleep", "x"]] {
        let mut argv = vec!["call", plain_addr.as_str()];
        argv.extend(args);
        let out = rpcmux(&argv, None);
        let e = text(&out.stderr);
        assert!(e.starts_with("error -32602: "), "{e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
    // Params given as JSON were meant as written: no hint.
    let out = rpcmux(
        &["call", "-f", "-", &plain_addr, "VM.getStats"],
        Some("[123]"),
    );
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out.stderr)
    );
}

/// A taken address is named, with what to do about it.
#[test]
fn serve_names_the_address_it_cannot_listen_on() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = rpcmux(&["serve", "--listen", &addr], None);
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(e.contains(&format!("cannot listen: {addr}: ")), "{e}");
    assert!(e.contains("choose another address with --listen"), "{e}");
}
