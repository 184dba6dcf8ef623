//! `GET /metrics` after a mixed workload: every protocol, errors, a limit refusal and a
//! sniff timeout; the exposition linted by `promtool check metrics` (Debian's
//! prometheus package), parsed by Python's `prometheus_client`, and its values checked.
//! Also `/ready` flipping to 503 when shutdown begins, and the access log naming each
//! batch member.

use crate::common::{exchange, http_post, json, parse_http, run_py, Server};
use rpcmux::client::{Client, ClientProto, ConnectOpts};
use rpcmux::{Params, Value};
use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    get_with(addr, path, "")
}

fn get_with(addr: std::net::SocketAddr, path: &str, headers: &str) -> (u16, String, Vec<u8>) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n");
    parse_http(&exchange(addr, req.as_bytes()))
}

/// Every sample of the exposition, by `name{sorted labels}`, from prometheus_client's
/// parser for `format` (`classic` or `openmetrics`).
fn samples(text: &str, format: &str) -> HashMap<String, f64> {
    let dir = std::env::temp_dir().join(format!("rpcmux-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("metrics.{format}"));
    std::fs::write(&file, text).unwrap();
    let out = run_py("metrics_parse.py", &[file.to_str().unwrap(), format]);
    serde_json::from_str(&out).expect("parser output")
}

fn value(s: &HashMap<String, f64>, key: &str) -> f64 {
    *s.get(key)
        .unwrap_or_else(|| panic!("no sample {key}; have:\n{:#?}", s.keys()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_mixed_workload_and_pass_promtool() {
    let server = Server::start(&["--max-body", "2000", "--sniff-timeout", "0.3"]);
    let addr = server.addr;
    let (post, raw) = (
        move |body: &'static [u8]| http_post(addr, None, body),
        move |bytes: &'static [u8]| exchange(addr, bytes),
    );
    tokio::task::spawn_blocking(move || {
        // JSON-RPC over HTTP: one ok, one unknown verb, one domain error.
        let v = json(&post(br#"{"jsonrpc":"2.0","method":"ping","id":1}"#).2);
        assert_eq!(v["result"], true);
        let v = json(&post(br#"{"jsonrpc":"2.0","method":"no.such.verb","id":2}"#).2);
        assert_eq!(v["error"]["code"], -32601);
        let v =
            json(&post(br#"{"jsonrpc":"2.0","method":"VM.getStats","params":["nope"],"id":3}"#).2);
        assert_eq!(v["error"]["code"], 1);
        // XML-RPC.
        let xml = b"<?xml version=\"1.0\"?><methodCall><methodName>ping</methodName></methodCall>";
        assert_eq!(http_post(addr, Some("text/xml"), xml).0, 200);
        // JSON-RPC over raw TCP.
        let reply = raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n");
        assert!(String::from_utf8_lossy(&reply).contains("true"));
        // A body over --max-body: 413, counted as a limit refusal.
        let big: &'static [u8] = Box::leak(vec![b' '; 3000].into_boxed_slice());
        assert_eq!(http_post(addr, Some("application/json"), big).0, 413);
    })
    .await
    .unwrap();
    for proto in [ClientProto::Msgpack, ClientProto::Stomp] {
        let c = Client::connect(proto, &addr.to_string(), ConnectOpts::default())
            .await
            .unwrap();
        let r = c.call("ping", Params::Positional(vec![])).await.unwrap();
        assert_eq!(r, Ok(Value::Bool(true)));
    }
    // A connection that never says anything: the sniff deadline passes.
    let silent = std::net::TcpStream::connect(addr).unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    drop(silent);

    let (status, head, body) = tokio::task::spawn_blocking(move || get(addr, "/metrics"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{head}");
    let text = String::from_utf8(body).unwrap();

    // promtool lints names, types, units and the text format itself.
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus) must be installed");
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let s = samples(&text, "classic");
    let handled = |proto: &str, method: &str, code: &str| {
        value(
            &s,
            &format!("rpcmux_calls_handled_total{{code={code},method={method},protocol={proto}}}"),
        )
    };
    assert_eq!(handled("jsonrpc-http", "ping", "ok"), 1.0);
    assert_eq!(
        handled("jsonrpc-http", "unknown", "-32601"),
        1.0,
        "method label bounded"
    );
    assert_eq!(handled("jsonrpc-http", "VM.getStats", "1"), 1.0);
    assert_eq!(handled("xmlrpc", "ping", "ok"), 1.0);
    assert_eq!(handled("jsonrpc-tcp", "ping", "ok"), 1.0);
    assert_eq!(handled("msgpack-rpc", "ping", "ok"), 1.0);
    assert_eq!(handled("stomp", "ping", "ok"), 1.0);
    assert!(
        !text.contains("no.such.verb"),
        "a name a client sent never becomes a label"
    );
    assert_eq!(
        value(
            &s,
            "rpcmux_calls_started_total{method=ping,protocol=jsonrpc-http}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "rpcmux_call_duration_seconds_count{method=ping,protocol=xmlrpc}"
        ),
        1.0
    );
    assert_eq!(value(&s, "rpcmux_limit_refusals_total{limit=body}"), 1.0);
    assert_eq!(value(&s, "rpcmux_sniff_total{outcome=deadline}"), 1.0);
    assert!(value(&s, "rpcmux_sniff_total{outcome=http}") >= 6.0);
    assert_eq!(value(&s, "rpcmux_sniff_total{outcome=msgpack-rpc}"), 1.0);
    assert_eq!(value(&s, "rpcmux_sniff_total{outcome=stomp}"), 1.0);
    assert!(value(&s, "rpcmux_connections_accepted_total{}") >= 10.0);
    assert!(value(&s, "rpcmux_received_bytes_total{protocol=jsonrpc-tcp}") >= 40.0);
    assert!(value(&s, "rpcmux_sent_bytes_total{protocol=http}") > 0.0);
    // The scrape's own connection is open while it is answered.
    assert!(value(&s, "rpcmux_connections_open{protocol=http}") >= 1.0);

    // What Prometheus asks for: OpenMetrics, read by the strict OpenMetrics parser.
    let (status, head, body) = tokio::task::spawn_blocking(move || {
        get_with(
            addr,
            "/metrics",
            "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n",
        )
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert!(head.contains("application/openmetrics-text"), "{head}");
    let om = String::from_utf8(body).unwrap();
    assert!(om.ends_with("# EOF\n"));
    let s = samples(&om, "openmetrics");
    assert_eq!(
        value(
            &s,
            "rpcmux_calls_handled_total{code=ok,method=ping,protocol=stomp}"
        ),
        1.0
    );
}

#[test]
fn ready_turns_503_when_shutdown_begins_and_metrics_can_move_off_the_rpc_port() {
    let mut server = Server::start(&["--drain-delay", "1.5", "--metrics-listen", "127.0.0.1:0"]);
    let addr = server.addr;
    assert_eq!(get(addr, "/ready").0, 200);
    assert_eq!(get(addr, "/health").0, 200);
    assert_eq!(
        get(addr, "/metrics").0,
        404,
        "metrics live on their own address"
    );
    let (status, _, body) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("/ready"));
    assert!(server.wait_log("metrics on ", Duration::from_secs(5)));
    let maddr: std::net::SocketAddr = server
        .log()
        .lines()
        .find_map(|l| l.split("metrics on ").nth(1))
        .and_then(|a| a.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    let (status, _, body) = get(maddr, "/metrics");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("rpcmux_connections_accepted_total"));

    server.sigterm();
    std::thread::sleep(Duration::from_millis(300));
    // Draining: still accepting, /ready says 503, calls still answered.
    assert_eq!(get(addr, "/ready").0, 503);
    assert_eq!(get(addr, "/health").0, 200);
    let v = json(&http_post(addr, None, br#"{"jsonrpc":"2.0","method":"ping","id":1}"#).2);
    assert_eq!(v["result"], true, "calls are served while draining");
    assert!(server.wait_exit(Duration::from_secs(10)).success());
}

#[test]
fn access_log_names_every_batch_member_with_its_flow_id() {
    let server = Server::start(&["--access-log", "info"]);
    let body = br#"[{"jsonrpc":"2.0","method":"ping","id":1},{"jsonrpc":"2.0","method":"VM.getStats","params":["x"],"id":2}]"#;
    let req = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Request-Id: abc-123\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        std::str::from_utf8(body).unwrap()
    );
    let (status, _, _) = parse_http(&exchange(server.addr, req.as_bytes()));
    assert_eq!(status, 200);
    assert!(
        server.wait_log("VM.getStats", Duration::from_secs(5)),
        "{}",
        server.log()
    );
    let log = server.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("rpcmux::access"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per batch member:\n{log}");
    assert!(lines
        .iter()
        .any(|l| l.contains("ping") && l.contains("code=ok")));
    assert!(lines
        .iter()
        .any(|l| l.contains("VM.getStats") && l.contains("code=1")));
    assert!(
        lines
            .iter()
            .all(|l| l.contains("abc-123") && l.contains("127.0.0.1")),
        "{log}"
    );
}

#[test]
fn json_log_lines_parse_and_carry_the_access_fields() {
    let server = Server::start(&["--log-format", "json", "--access-log", "info"]);
    let v = json(
        &http_post(
            server.addr,
            None,
            br#"{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}"#,
        )
        .2,
    );
    assert_eq!(v["result"], 1);
    assert!(server.wait_log("rpcmux::access", Duration::from_secs(5)));
    let log = server.log();
    for line in log.lines() {
        let _: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
    }
    let access: serde_json::Value = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["target"] == "rpcmux::access")
        .unwrap();
    let f = &access["fields"];
    assert_eq!(f["protocol"], "jsonrpc-http");
    assert_eq!(f["method"], "echo");
    assert_eq!(f["code"], "ok");
    assert!(
        f["peer"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{access}"
    );
    // A number, not a string, for log shippers.
    assert!(f["duration_ms"].as_f64().unwrap() >= 0.0, "{f}");
}

/// `/metrics` on the RPC port answers only `[ops] metrics_from` (loopback by default):
/// verb names, counts and upstream URLs are not for whoever can reach the port.
#[test]
fn metrics_on_the_rpc_port_answer_only_the_allowed_networks() {
    let srv = Server::start(&["--metrics-from", "127.0.0.2/32"]);
    let from = |ip: [u8; 4]| {
        let sock = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )
        .unwrap();
        sock.bind(&std::net::SocketAddr::from((ip, 0)).into())
            .unwrap();
        sock.connect(&srv.addr.into()).unwrap();
        let mut s: std::net::TcpStream = sock.into();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut all = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut all).unwrap();
        parse_http(&all)
    };
    let (status, _, body) = from([127, 0, 0, 1]);
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("metrics_from"));
    let (status, _, body) = from([127, 0, 0, 2]);
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("rpcmux_connections_accepted"));
    // /health is for everyone (balancers).
    assert_eq!(get(srv.addr, "/health").0, 200);
}
