//! The known HTTP/2 attacks against the real binary under a memory limit, each from a raw
//! client written with Python's `h2` library (tests/python/h2_raw.py), each with a
//! bystander that must keep being answered: a reader that withholds flow-control window
//! from a big reply, rapid reset (CVE-2023-44487), a CONTINUATION flood, a PING and
//! SETTINGS flood, and more streams at once than SETTINGS_MAX_CONCURRENT_STREAMS allows.

use crate::common::{http_post, json, run_py, Server};
use serde_json::Value;
use std::time::Duration;

/// Peak RSS bound for one attack: the debug server idles near 30 MiB.
const PEAK_MIB: u64 = 200;

fn attack(srv: &Server, command: &[&str]) -> Value {
    let port = srv.port();
    let mut args = vec![port.as_str()];
    args.extend_from_slice(command);
    let out = run_py("h2_raw.py", &args);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// A bystander's call over HTTP/1.1 answers at once.
fn bystander(srv: &Server) {
    let (status, _, body) = http_post(
        srv.addr,
        None,
        br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
    );
    assert_eq!(status, 200);
    assert_eq!(json(&body)["result"], true);
}

fn metric(srv: &Server, name: &str) -> f64 {
    let (_, _, body) = crate::common::parse_http(&crate::common::exchange(
        srv.addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    String::from_utf8_lossy(&body)
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn a_reader_withholding_window_is_closed_after_send_timeout() {
    let srv = Server::start_limited(&["--send-timeout", "3"]);
    let out = attack(&srv, &["zero-window"]);
    // The socket never stalls (the server sends nothing it may not), yet the reply waits:
    // closed after send_timeout (3 s), not after idle_timeout (300 s) or never.
    let after = out["closed_after"]
        .as_f64()
        .unwrap_or_else(|| panic!("never closed: {out}"));
    assert!(after < 30.0, "{out}");
    assert_eq!(
        metric(&srv, "rpcmux_limit_refusals_total{limit=\"send_timeout\"}"),
        1.0
    );
    // The reply's charge went with it.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while metric(&srv, "rpcmux_budget_used_bytes{budget=\"output\"}") > 0.0 {
        assert!(std::time::Instant::now() < end, "output still charged");
        std::thread::sleep(Duration::from_millis(100));
    }
    bystander(&srv);
    assert!(srv.peak_rss_mib() < PEAK_MIB, "{} MiB", srv.peak_rss_mib());
}

#[test]
fn rapid_reset_is_cut_off_before_it_starts_work() {
    let srv = Server::start_limited(&[]);
    let out = attack(&srv, &["rapid-reset", "5000"]);
    // GOAWAY ENHANCE_YOUR_CALM (0xb) long before the 5000 streams.
    assert_eq!(out["goaway"], 0xb, "{out}");
    let streams = out["streams"].as_u64().unwrap();
    assert!(streams < 5000, "{out}");
    // Each stream asked for a 2 s sleep: hardly any started, none still running.
    let started = metric(
        &srv,
        "rpcmux_calls_started_total{protocol=\"jsonrpc-h2\",method=\"sleep\"}",
    );
    assert!(
        started <= 50.0,
        "{started} sleeps started of {streams} streams"
    );
    bystander(&srv);
    assert!(srv.peak_rss_mib() < PEAK_MIB, "{} MiB", srv.peak_rss_mib());
}

#[test]
fn a_continuation_flood_is_closed_at_the_header_list_bound() {
    let srv = Server::start_limited(&[]);
    // 2000 frames of 16 KiB would be 32 MiB of one header block.
    let out = attack(&srv, &["continuation", "2000"]);
    assert!(out["closed_after"].is_number(), "never closed: {out}");
    assert!(out["frames"].as_u64().unwrap() < 2000, "{out}");
    bystander(&srv);
    assert!(srv.peak_rss_mib() < PEAK_MIB, "{} MiB", srv.peak_rss_mib());
}

#[test]
fn a_ping_and_settings_flood_holds_no_memory() {
    let srv = Server::start_limited(&[]);
    let before = srv.rss_mib();
    let out = attack(&srv, &["ping-flood", "20000"]);
    assert!(out["frames"].as_u64().unwrap() > 0, "{out}");
    // Answered or closed, either way the acknowledgements it never read are not kept:
    // the h2 crate holds one pending PONG and one SETTINGS ACK at a time.
    bystander(&srv);
    let after = srv.rss_mib();
    assert!(
        after < before + 32,
        "{before} MiB before, {after} MiB after: {out}"
    );
    assert!(srv.peak_rss_mib() < PEAK_MIB, "{} MiB", srv.peak_rss_mib());
}

#[test]
fn streams_past_max_concurrent_streams_are_refused_and_the_rest_answered() {
    const LIMIT: u64 = 4;
    const EXTRA: u64 = 6;
    let srv = Server::start_limited(&["--max-in-flight", &LIMIT.to_string()]);
    // LIMIT + EXTRA streams opened at once, each holding back its body so none ends.
    let out = attack(&srv, &["too-many-streams", &EXTRA.to_string()]);
    assert_eq!(out["advertised"], LIMIT, "{out}");
    assert_eq!(out["opened"], LIMIT + EXTRA, "{out}");
    // The streams past the limit (the last EXTRA opened: 9, 11, ...) are refused with
    // RST_STREAM REFUSED_STREAM (0x7), and nothing else is reset.
    let refused: Vec<u64> = (LIMIT..LIMIT + EXTRA).map(|i| 2 * i + 1).collect();
    let got: Vec<u64> = out["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(got, refused, "{out}");
    let resets = out["resets"].as_object().unwrap();
    assert_eq!(resets.len() as u64, EXTRA, "{out}");
    assert!(resets.values().all(|c| c == 7), "{out}");
    // The streams within it are answered, each with its own call's result.
    let answered = out["answered"].as_object().unwrap();
    assert_eq!(answered.len() as u64, LIMIT, "{out}");
    for sid in (0..LIMIT).map(|i| 2 * i + 1) {
        let a = &answered[&sid.to_string()];
        assert_eq!(a["status"], 200, "stream {sid}: {out}");
        assert_eq!(a["body"]["id"], sid, "stream {sid}: {out}");
        assert_eq!(a["body"]["result"], format!("stream {sid}"), "{out}");
    }
    // A refusal is per stream: the connection stays open and answers the next call.
    assert_eq!(out["goaway"], Value::Null, "{out}");
    assert_eq!(out["closed"], false, "{out}");
    assert_eq!(out["after"]["status"], 200, "{out}");
    assert_eq!(out["after"]["body"]["result"], true, "{out}");
    bystander(&srv);
    assert!(srv.peak_rss_mib() < PEAK_MIB, "{} MiB", srv.peak_rss_mib());
}
