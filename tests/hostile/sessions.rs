//! Issue 46, case 9: WebSocket sessions over HTTP/2 escaped every per-connection bound
//! (one address, 32 h2c connections x 128 WebSocket streams x 64 patterns of 1 KiB held
//! 4,096 sessions and 262,144 subscriptions, +444 MB). Now one HTTP/2 connection runs
//! at most `max_sessions_per_connection` sessions (the next CONNECT answered 429 before
//! any upgrade), its sessions together hold at most `max_connection_subscriptions`, and
//! one address's connections at most `max_subscriptions_per_ip` (-32002 naming the cap);
//! what was counted is given back when the connections close. The attack runs from a
//! raw client written with Python's `h2` (tests/python/h2_raw.py `ws-sessions`).

use crate::common::{run_py, Server};
use serde_json::Value;
use std::time::Duration;

const SESSIONS: u64 = 4;
const PER_CONN: u64 = 16;
const PER_IP: u64 = 40;

/// `ws-sessions` against `srv`: CONNS connections x STREAMS sessions x PATTERNS patterns.
fn attack(srv: &Server, conns: u64, streams: u64, patterns: u64, bytes: u64) -> Value {
    let args: Vec<String> = [srv.pid() as u64, conns, streams, patterns, bytes]
        .iter()
        .map(u64::to_string)
        .collect();
    let mut argv = vec![srv.port(), "ws-sessions".to_owned()];
    argv.extend(args);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_py("h2_raw.py", &argv);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn sessions_and_subscriptions_past_the_per_connection_and_address_caps_are_refused() {
    let mut srv = Server::start_limited(&[
        "--max-sessions-per-connection",
        &SESSIONS.to_string(),
        "--max-connection-subscriptions",
        &PER_CONN.to_string(),
        "--max-subscriptions-per-ip",
        &PER_IP.to_string(),
    ]);
    // 4 connections (kept open together), 6 sessions each, 8 patterns of 1 KiB each.
    let out = attack(&srv, 4, 6, 8, 1024);
    let conns = out["conns"].as_array().unwrap();
    for (k, c) in conns.iter().enumerate() {
        // The sessions past the cap get 429 with a body naming it; the rest are upgraded.
        let statuses: Vec<u64> = c["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap())
            .collect();
        assert_eq!(
            statuses.iter().filter(|&&s| s == 200).count() as u64,
            SESSIONS,
            "conn {k}: {c}"
        );
        assert_eq!(
            statuses.iter().filter(|&&s| s == 429).count(),
            2,
            "conn {k}: {c}"
        );
        let refusal = c["refusal"].to_string();
        assert!(
            refusal.contains("max_sessions_per_connection = 4"),
            "conn {k}: {c}"
        );
    }
    // The connection's cap binds the first two connections, the address's the rest:
    // 16 + 16 + 8 + 0 subscriptions made of 32 asked on each.
    let made: Vec<u64> = conns.iter().map(|c| c["made"].as_u64().unwrap()).collect();
    assert_eq!(made, [16, 16, 8, 0], "{out}");
    let refused: Vec<u64> = conns
        .iter()
        .map(|c| c["refused"].as_u64().unwrap())
        .collect();
    assert_eq!(refused, [16, 16, 24, 32], "{out}");
    let errors = |k: usize| conns[k]["errors"].to_string();
    for k in 0..2 {
        assert!(
            errors(k).contains("-32002") && errors(k).contains("max_connection_subscriptions = 16"),
            "{}",
            errors(k)
        );
    }
    for k in 2..4 {
        assert!(
            errors(k).contains("-32002") && errors(k).contains("max_subscriptions_per_ip = 40"),
            "{}",
            errors(k)
        );
        assert!(
            !errors(k).contains("max_connection_subscriptions"),
            "{}",
            errors(k)
        );
    }
    eprintln!(
        "held: server RSS {} KiB with 16 sessions, 40 subscriptions",
        out["rss_kib_held"]
    );
    // The connections closed: their subscriptions were given back to the address.
    let mut again = Value::Null;
    for _ in 0..50 {
        again = attack(&srv, 1, 1, 1, 16);
        if again["conns"][0]["made"] == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(again["conns"][0]["made"], 1, "{again}");
    crate::common::hostile::assert_peak_rss(&mut srv, 200, "h2 WebSocket sessions");
}
