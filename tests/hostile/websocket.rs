//! WebSocket attacks against the real binary under an address-space limit: oversize
//! messages, a 1 GiB frame header and endless fragments (close 1009 while others are
//! served), a peer that stops answering pings (dropped with its subscriptions), a
//! thousand idle sessions (memory each, against raw-TCP connections), a reader that
//! never reads (backpressure: the server's memory stays bounded).

use crate::common::hostile::*;
use crate::common::ws;
use crate::common::ws::RawWs;
use crate::common::*;
use std::io::Write;
use std::time::{Duration, Instant};

const PING: &str = r#"{"jsonrpc":"2.0","method":"ping","id":1}"#;

fn metric(srv: &Server, name: &str) -> Option<f64> {
    let raw = exchange(
        srv.addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    let text = String::from_utf8_lossy(&raw).into_owned();
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with([' ', '{']))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn giant_frame_header_oversize_message_and_endless_fragments_get_1009() {
    let mut srv = Server::start_limited(&[]);
    let mut bystander = RawWs::open(srv.addr, "");
    // A header announcing a 1 GiB text frame: refused from the header alone.
    let mut c = RawWs::open(srv.addr, "");
    let mut head = vec![0x81, 0xFF];
    head.extend_from_slice(&(1u64 << 30).to_be_bytes());
    head.extend_from_slice(&[1, 2, 3, 4]);
    c.s.write_all(&head).unwrap();
    c.s.write_all(&[b' '; 65536]).unwrap();
    assert_eq!(c.close_code(), Some(1009));
    // 17 MiB in 1 MiB fragments: over the 16 MiB message cap.
    let mut c = RawWs::open(srv.addr, "");
    let chunk = vec![b' '; 1 << 20];
    for i in 0..17 {
        if c.frame(false, if i == 0 { 1 } else { 0 }, &chunk).is_err() {
            break;
        }
    }
    assert_eq!(c.close_code(), Some(1009));
    // Tiny fragments without end: over the fragment cap (1024).
    let mut c = RawWs::open(srv.addr, "");
    for i in 0..1100 {
        if c.frame(false, if i == 0 { 1 } else { 0 }, b" ").is_err() {
            break;
        }
    }
    assert_eq!(c.close_code(), Some(1009));
    bystander.text(PING).unwrap();
    assert_eq!(bystander.data().unwrap().json()["result"], true);
    // Nothing of the 1 GiB was reserved; the 16 MiB message was held once at most.
    assert_peak_rss(
        &mut srv,
        200,
        "1 GiB frame header, 17 MiB message, 1100 fragments",
    );
}

#[test]
fn peer_that_stops_answering_pings_is_dropped_with_its_subscriptions() {
    let srv = Server::start_limited(&["--ws-ping-interval", "0.5", "--ws-pong-timeout", "0.5"]);
    let gauge = "rpcmux_event_subscriptions";
    let mut c = RawWs::open(srv.addr, "");
    c.text(r#"{"jsonrpc":"2.0","method":"subscribe","params":["*"],"id":1}"#)
        .unwrap();
    assert!(c.data().unwrap().json()["result"].is_i64());
    assert_eq!(metric(&srv, gauge), Some(1.0));
    // The peer goes silent (a severed link): it gets a ping, answers nothing, and is
    // closed 1001 within the interval plus the timeout.
    let start = Instant::now();
    let first = c.read().unwrap();
    assert_eq!(first.opcode, 9, "a ping first");
    assert_eq!(c.close_code(), Some(1001));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "dropped after {took:?}");
    let deadline = Instant::now() + Duration::from_secs(3);
    while metric(&srv, gauge) != Some(0.0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        metric(&srv, gauge),
        Some(0.0),
        "its subscription was removed"
    );
    // A peer that answers pings stays.
    let mut alive = RawWs::open(srv.addr, "");
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let f = alive.read().unwrap();
        assert_eq!(f.opcode, 9, "only pings while idle: {f:?}");
        alive.frame(true, 10, &f.payload).unwrap();
    }
    alive.text(PING).unwrap();
    assert_eq!(alive.data().unwrap().json()["result"], true);
}

/// The server's anonymous memory once it stops shrinking: an idle stream connection
/// gives its buffers back after a second, the allocator returns emptied pages a second
/// after that (`src/cli/alloc.rs`), so memory falls for some seconds after a batch.
fn settled_anon_kib(srv: &Server) -> u64 {
    std::thread::sleep(Duration::from_millis(2500));
    let mut last = srv.status_kib("RssAnon").unwrap();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(500));
        let now = srv.status_kib("RssAnon").unwrap();
        if now + 64 >= last {
            return now;
        }
        last = now;
    }
    last
}

/// KiB of server anonymous memory per connection, opened `n` at a time by `open` (each
/// after one call).
fn kib_per_connection<T>(srv: &Server, n: usize, open: impl Fn() -> T) -> (f64, Vec<T>) {
    let before = settled_anon_kib(srv);
    let held: Vec<T> = (0..n).map(|_| open()).collect();
    let after = settled_anon_kib(srv);
    ((after as f64 - before as f64) / n as f64, held)
}

#[test]
fn a_thousand_idle_websocket_sessions_cost_about_what_raw_tcp_connections_do() {
    // Without transparent huge pages: mimalloc asks for them where the system lets it,
    // and the resident size then moves 2 MiB at a time, 4 KiB per connection of a batch.
    let srv = Server::start_limited_in(
        HOSTILE_AS_LIMIT,
        &["--max-connections-per-ip", "0"],
        &[("MIMALLOC_ALLOW_THP", "0")],
    );
    // Warm the server: the first connections of each kind grow the allocator's heaps.
    drop(
        (0..100)
            .map(|_| RawWs::open(srv.addr, ""))
            .collect::<Vec<_>>(),
    );
    drop(
        (0..100)
            .map(|_| Lines::connect(srv.addr).unwrap())
            .collect::<Vec<_>>(),
    );
    std::thread::sleep(Duration::from_secs(1));
    // Both kinds on one warmed server, the raw-TCP connections held while the
    // WebSocket sessions are measured.
    let addr = srv.addr;
    let (tcp, tcp_held) = kib_per_connection(&srv, 1000, || {
        let mut l = Lines::connect(addr).unwrap();
        l.send(format!("{PING}\n").as_bytes()).unwrap();
        l.line(1 << 16).unwrap();
        l
    });
    let (ws, ws_held) = kib_per_connection(&srv, 1000, || {
        let mut c = RawWs::open(addr, "");
        c.text(PING).unwrap();
        c.data().unwrap();
        c
    });
    assert_eq!((tcp_held.len(), ws_held.len()), (1000, 1000));
    eprintln!(
        "idle memory: raw-TCP JSON-RPC {tcp:.1} KiB, WebSocket JSON-RPC {ws:.1} KiB per connection"
    );
    // A session left hyper: what remains is the stream driver's, as for raw TCP.
    assert!(
        ws <= tcp * 1.5 + 2.0,
        "an idle WebSocket session costs {ws:.1} KiB against {tcp:.1} KiB for raw TCP"
    );
}

#[test]
fn a_reader_that_never_reads_meets_backpressure() {
    let mut srv = Server::start_limited(&[]);
    let mut c = RawWs::open(srv.addr, "");
    c.s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    // 64 KiB echoes, never reading a reply: the server stops reading once its unsent
    // output is at its cap, and the writes block.
    let mut big = String::from(r#"{"jsonrpc":"2.0","method":"echo","params":[""#);
    big.push_str(&"x".repeat(64 << 10));
    big.push_str(r#""],"id":1}"#);
    let frame = ws::encode(true, 1, big.as_bytes());
    let mut sent = 0usize;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if c.s.write_all(&frame).is_err() {
            break;
        }
        sent += frame.len();
    }
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the server kept reading: {sent} bytes sent without a reply read"
    );
    eprintln!("blocked after {} MiB sent", sent >> 20);
    let mut other = Lines::connect(srv.addr).unwrap();
    other.send(format!("{PING}\n").as_bytes()).unwrap();
    assert!(other.line(1 << 16).unwrap().contains("true"));
    assert_peak_rss(&mut srv, 200, "a WebSocket peer that never reads");
}

#[test]
fn a_silent_peer_waiting_for_a_long_call_is_not_taken_for_dead() {
    let srv = Server::start_limited(&["--ws-ping-interval", "0.3", "--ws-pong-timeout", "0.3"]);
    let mut c = RawWs::open(srv.addr, "");
    // Longer than ping_interval + pong_timeout, and the peer never answers a ping.
    c.text(r#"{"jsonrpc":"2.0","method":"sleep","params":[2000],"id":1}"#)
        .unwrap();
    let reply = c.data().unwrap();
    assert_eq!(reply.json()["result"], 2000, "{reply:?}");
    // Then, silent with nothing running, it is dropped.
    assert_eq!(c.close_code(), Some(1001));
}
