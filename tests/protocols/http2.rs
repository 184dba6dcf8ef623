//! HTTP/2 on the shared port, with clients nobody here wrote: curl with prior knowledge
//! (cleartext) and over TLS (ALPN h2), Python's httpx with `http2=True` (many calls at
//! once on one connection), h2load driving many streams, and Node's own HTTP/2 client
//! opening a WebSocket by extended CONNECT (RFC 8441). Every answer is compared with
//! what the same request gets over HTTP/1.1.

use crate::common::pki::Pki;
use crate::common::{run_py, Server};
use std::process::Command;

/// curl's answer: (HTTP version, status, body). `args` go before the URL.
fn curl(args: &[&str], url: &str) -> (String, u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_version} %{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, tail) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (version, code) = tail.split_once(' ').unwrap_or((tail, "0"));
    (
        version.to_owned(),
        code.parse().unwrap_or(0),
        body.to_owned(),
    )
}

fn json_post(body: &str) -> Vec<&str> {
    vec![
        "-H",
        "content-type: application/json",
        "--data-binary",
        body,
    ]
}

#[test]
fn curl_with_prior_knowledge_gets_what_http1_gets() {
    let srv = Server::start(&["--max-body", "2000"]);
    let url = format!("http://{}/", srv.addr);
    let h2 = |args: &[&str], path: &str| {
        let mut a = vec!["--http2-prior-knowledge"];
        a.extend_from_slice(args);
        curl(&a, &format!("{url}{path}"))
    };
    let h1 = |args: &[&str], path: &str| curl(args, &format!("{url}{path}"));

    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "call",
            json_post(r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":[[1,2.5,"x"]]}"#),
            "",
        ),
        (
            "batch",
            json_post(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#),
            "",
        ),
        (
            "notification",
            json_post(r#"{"jsonrpc":"2.0","method":"ping"}"#),
            "",
        ),
        (
            "xml-rpc",
            vec![
                "-H",
                "content-type: text/xml",
                "--data-binary",
                "<?xml version=\"1.0\"?><methodCall><methodName>echo</methodName><params><param><value><i4>7</i4></value></param></params></methodCall>",
            ],
            "RPC2",
        ),
        ("health", vec![], "health"),
        ("ready", vec![], "ready"),
    ];
    for (what, args, path) in &cases {
        let (v2, s2, b2) = h2(args, path);
        let (v1, s1, b1) = h1(args, path);
        assert_eq!((v2.as_str(), v1.as_str()), ("2", "1.1"), "{what}");
        assert_eq!(s2, s1, "{what}: status over HTTP/2 and HTTP/1.1");
        assert_eq!(b2, b1, "{what}: body over HTTP/2 and HTTP/1.1");
    }

    // Over max_body: the same refusal (413 with a JSON-RPC error body). Sent by a raw h2
    // client, which reads an answer that comes before the whole body went out (curl 7.88
    // at times reports such a stream as reset and shows nothing).
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"echo","params":["{}"]}}"#,
        "x".repeat(3962)
    );
    let (_, s1, b1) = h1(&json_post(&big), "");
    let out = run_py("h2_raw.py", &[&srv.port(), "over-limit", "3962"]);
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["status"], 413, "{v}");
    assert_eq!(
        (v["status"].as_u64(), v["body"].as_str()),
        (Some(s1 as u64), Some(b1.as_str()))
    );

    // A gzip body (curl sends it as given; the server inflates it).
    let dir = std::env::temp_dir().join(format!("rpcmux-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let raw = dir.join("call.json");
    std::fs::write(
        &raw,
        r#"{"jsonrpc":"2.0","id":9,"method":"echo","params":["zipped"]}"#,
    )
    .unwrap();
    assert!(Command::new("gzip")
        .args(["-kf", raw.to_str().unwrap()])
        .status()
        .unwrap()
        .success());
    let gz = format!("@{}.gz", raw.display());
    let (v, s, b) = h2(
        &[
            "-H",
            "content-type: application/json",
            "-H",
            "content-encoding: gzip",
            "--data-binary",
            &gz,
        ],
        "",
    );
    assert_eq!((v.as_str(), s), ("2", 200), "{b}");
    assert!(b.contains(r#""result":"zipped""#), "{b}");

    // The calls were counted under the HTTP/2 protocol labels.
    let (_, _, metrics) = h2(&[], "metrics");
    assert!(
        metrics.contains(r#"rpcmux_calls_started_total{protocol="jsonrpc-h2",method="echo"}"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"rpcmux_calls_started_total{protocol="xmlrpc-h2",method="echo"}"#),
        "{metrics}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn curl_over_tls_negotiates_h2_by_alpn() {
    let pki = Pki::new();
    let mut args = pki.server_flags();
    args.extend(["--tls".into(), "required".into()]);
    let srv = Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let url = format!("https://127.0.0.1:{}/", srv.port());
    let ca = pki.path("ca.pem");
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"whoami"}"#;
    let mut a = vec!["--http2", "--cacert", ca.as_str()];
    a.extend(json_post(call));
    let (v, s, b) = curl(&a, &url);
    assert_eq!((v.as_str(), s), ("2", 200), "{b}");
    assert!(b.contains(r#""protocol":"jsonrpc-h2""#), "{b}");
    // A client that offers only HTTP/1.1 still gets it.
    let mut a = vec!["--http1.1", "--cacert", ca.as_str()];
    a.extend(json_post(call));
    let (v, s, b) = curl(&a, &url);
    assert_eq!((v.as_str(), s), ("1.1", 200), "{b}");
    assert!(b.contains(r#""protocol":"jsonrpc-http""#), "{b}");
}

#[test]
fn httpx_multiplexes_calls_on_one_connection() {
    let srv = Server::start(&[]);
    let n = 20;
    let out = run_py(
        "http2_clients.py",
        &[&format!("http://{}/", srv.addr), &n.to_string()],
    );
    assert!(out.contains("ok jsonrpc echo"), "{out}");
    assert!(out.contains("ok xmlrpc echo"), "{out}");
    // 20 calls of 500 ms each took about 500 ms, not 10 s: they ran at once, on the one
    // connection httpx keeps (a property of the protocol, with a bound far from both).
    let elapsed: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("elapsed "))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(elapsed < 5.0, "{n} sleeps of 0.5 s took {elapsed} s: {out}");
}

#[test]
fn h2load_drives_many_streams() {
    let srv = Server::start(&[]);
    let dir = std::env::temp_dir().join(format!("rpcmux-h2load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body.json");
    std::fs::write(
        &body,
        r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["h2load"]}"#,
    )
    .unwrap();
    let out = Command::new("h2load")
        .args(["-n", "2000", "-c", "10", "-m", "10", "-d"])
        .arg(&body)
        .args(["-H", "content-type: application/json"])
        .arg(format!("http://{}/", srv.addr))
        .output()
        .expect("h2load (Debian nghttp2-client) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("requests:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("2000 succeeded") && line.contains("0 failed") && line.contains("0 errored"),
        "{line}\n{text}"
    );
    let codes = text
        .lines()
        .find(|l| l.starts_with("status codes:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(codes.contains("2000 2xx"), "{codes}");
    assert!(
        text.contains("Application protocol: h2c"),
        "h2load spoke HTTP/2: {text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn websocket_over_http2_with_nodes_extended_connect() {
    let srv = Server::start(&[]);
    let out = crate::common::run_node("ws_over_h2.mjs", &[&format!("http://{}", srv.addr)]);
    let r: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["settings"]["enableConnectProtocol"], true, "{r}");
    assert_eq!(r["status"], 200, "RFC 8441 answers 200: {r}");
    assert_eq!(r["protocol"], "jsonrpc", "{r}");
    assert_eq!(r["results"]["1"], 9007199254740991u64, "{r}");
    assert_eq!(r["results"]["2"]["protocol"], "jsonrpc-ws-h2", "{r}");
    assert!(r["results"]["3"].is_u64(), "a subscription id: {r}");
    assert_eq!(r["post"], "h2-ws-vm", "a POST beside the session: {r}");
    assert_eq!(r["event"], "|virt|VM_status|h2-ws-vm", "{r}");
    // Counted under their own label.
    let req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    let (_, _, body) =
        crate::common::parse_http(&crate::common::exchange(srv.addr, req.as_bytes()));
    let metrics = String::from_utf8_lossy(&body);
    assert!(metrics.contains("protocol=\"jsonrpc-ws-h2\""), "{metrics}");
}
