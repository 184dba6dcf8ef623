//! Budgets as properties of every path, not of the paths attacked before: compressed
//! bodies waiting to be inflated, replies HTTP/2 streams hold for readers that grant no
//! window, and events waiting for a subscriber that never reads. Each attack runs
//! against the real binary under an address-space limit, with the server's RSS checked
//! against its budgets plus the margin docs/limits.md states.

use crate::common::hostile::*;
use crate::common::*;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

/// A JSON-RPC `echo` of text that does not compress: its gzip is about as long as the
/// text (`bytes`), so a crowd of them fills the input budget while compressed.
fn incompressible_echo(bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let text: String = (0..bytes)
        .map(|_| char::from(b'a' + (rng.next() % 26) as u8))
        .collect();
    jsonrpc("echo", &format!("[\"{text}\"]"), "1")
}

/// The gzip wedge: a crowd of connections from one address each POSTs a ~47 KB gzip
/// body, more than the input budget holds compressed. The bodies used to keep their
/// share while waiting to be inflated, and inflating waited for the budget to fall below
/// its cap: it never did, and every HTTP and raw-TCP call waited for good, also after
/// the crowd had gone. Now waiting bodies are parked (they keep nobody waiting) and
/// turns at inflating go round the client addresses: once the crowd closes, a
/// bystander's ping and its own gzip'd call (from another address) are answered.
#[test]
fn a_crowd_of_gzip_bodies_cannot_wedge_the_budget() {
    // 4 MiB of input budget: 200 bodies of 47 KB hold twice it, reserve included.
    let mut srv = Server::start_limited(&["--max-total-in-flight-bytes", "4194304"]);
    let body = gzip(&incompressible_echo(80 * KIB, 7));
    assert!(body.len() > 40 * KIB, "{} bytes of gzip", body.len());
    let request = post_bytes(&[JSON, GZIP], &body);
    let mut crowd = Vec::new();
    for _ in 0..200 {
        let mut s = dial(srv.addr, ANSWER_TIMEOUT).expect("connect");
        std::io::Write::write_all(&mut s, &request).expect("send");
        crowd.push(s);
    }
    // Let the server read what it will of them, then the crowd goes away.
    std::thread::sleep(Duration::from_secs(2));
    assert_alive(&mut srv, "after the crowd sent its bodies");
    drop(crowd);

    let elsewhere = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let started = Instant::now();
    let ping = ping_from(elsewhere, srv.addr);
    let ping_took = started.elapsed();
    let small = gzip(&jsonrpc("echo", "[\"still here\"]", "2"));
    let started = Instant::now();
    let echo = post_from(elsewhere, srv.addr, &[JSON, GZIP], &small);
    let echo_took = started.elapsed();
    eprintln!("after the crowd closed: ping {ping_took:?}, gzip echo {echo_took:?}");
    ping.unwrap_or_else(|e| panic!("the bystander's ping: {e}; log:\n{}", srv.log_tail(20)));
    let echo = echo.unwrap_or_else(|e| panic!("the bystander's gzip call: {e}"));
    assert_eq!(echo.status, 200, "{}", echo.text());
    assert_eq!(echo.json().unwrap()["result"], "still here");
    // Raw TCP shares the budget: it is not wedged either.
    ping_tcp(srv.addr).expect("a raw-TCP ping");
    // Whatever the crowd's connections held comes back once their calls are done.
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let used = metric_value(
            &metrics_text(srv.addr),
            "rpcmux_budget_used_bytes{budget=\"input\"}",
        );
        if used == 0 {
            break;
        }
        assert!(
            Instant::now() < end,
            "input budget still holds {used} bytes"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Read what the server sent until it closes (within 10 s and 256 MiB): whether it
/// closed, and the last 64 KiB read.
fn drain_until_closed(mut s: std::net::TcpStream) -> (bool, Vec<u8>) {
    let end = Instant::now() + Duration::from_secs(10);
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let (mut buf, mut total, mut tail) = (vec![0u8; 1 << 16], 0usize, Vec::new());
    while Instant::now() < end && total < 256 * MIB {
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => return (true, tail),
            Ok(n) => {
                total += n;
                tail.extend_from_slice(&buf[..n]);
                let cut = tail.len().saturating_sub(64 * KIB);
                tail.drain(..cut);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return (true, tail),
        }
    }
    (false, tail)
}

/// `ping` over JSON-RPC/HTTP from `local`.
fn ping_from(local: IpAddr, addr: SocketAddr) -> Result<(), String> {
    let r = post_from(local, addr, &[JSON], &jsonrpc("ping", "[]", "1"))?;
    match r.json()?["result"] == true {
        true => Ok(()),
        false => Err(format!("ping answered {} {}", r.status, r.text())),
    }
}

/// POST from `local`, every step within ANSWER_TIMEOUT.
fn post_from(
    local: IpAddr,
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Resp, String> {
    let mut s = dial_from(local, addr, ANSWER_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    std::io::Write::write_all(&mut s, &post_bytes(headers, body)).map_err(|e| e.to_string())?;
    read_response(&mut s, MIB)
}

/// HTTP/2 streams whose client grants no flow-control window, each a small gzip'd
/// `echo` asking for a big reply (h2_raw.py `unread-echos`): every reply is made and
/// held. Replies past the output budget become the small -32006 error; that error used
/// to keep the whole reply's buffer (its capacity) uncharged, so one connection of 100
/// streams of 16 MiB replies killed the server in two seconds. Now a refused reply's
/// memory goes, and accepted ones are charged by what they hold.
fn unread_h2_replies(conns: usize, streams: usize, reply: usize, peak_mib: u64) {
    // Small budgets, so the attack overruns them many times within a debug build's pace.
    let mut srv = Server::start_limited(&[
        "--max-total-output",
        "16777216",
        "--max-total-in-flight-bytes",
        "8388608",
    ]);
    let (pid, port) = (srv.pid().to_string(), srv.port());
    let args = [
        port.as_str(),
        "unread-echos",
        &pid,
        &conns.to_string(),
        &streams.to_string(),
        &reply.to_string(),
    ];
    let out = run_py("h2_raw.py", &args);
    let out: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    eprintln!("unread HTTP/2 replies: {out}");
    assert_alive(&mut srv, "after the unread replies");
    assert_eq!(
        out["answered"].as_u64(),
        Some((conns * streams) as u64),
        "every stream answered (its reply made and held): {out}"
    );
    let held_mib = out["rss_kib_held"].as_u64().unwrap_or(u64::MAX) / 1024;
    assert!(
        held_mib <= peak_mib,
        "{held_mib} MiB resident while the replies were held (bound {peak_mib}): {out}"
    );
    // Replies are checked against the output budget once encoded, so calls finishing
    // together may each pass it: it is overdrawn by at most the replies of the calls
    // running at once, which the 8 MiB input budget bounds.
    assert!(
        out["output_budget_held"].as_f64().unwrap_or(f64::MAX) <= (16 + 8 + 4) as f64 * MIB as f64,
        "{out}"
    );
    assert_peak_rss(&mut srv, peak_mib, "unread HTTP/2 replies");
    ping_http(srv.addr).expect("a bystander's ping afterwards");
}

/// The bound for the unread-reply attacks: the idle debug server (~60 MiB), the 16 MiB
/// output budget, the 8 MiB input budget about three times over while calls run (the
/// body, its decoded value, the reply being encoded: ~32 MiB) and HTTP/2's own buffers.
/// Without the fix the refused replies' buffers alone held hundreds of MiB.
const UNREAD_H2_PEAK_MIB: u64 = 200;

#[test]
fn one_h2_connection_of_unread_big_replies_is_bounded() {
    unread_h2_replies(1, 60, 4 * MIB, UNREAD_H2_PEAK_MIB);
}

#[test]
fn many_h2_connections_of_unread_replies_are_bounded() {
    unread_h2_replies(20, 40, 256 * KIB, UNREAD_H2_PEAK_MIB);
}

/// A subscriber that never reads, while another client publishes big events: its
/// outbox is bounded by bytes (and charged to the output budget), so it is told what it
/// lost (`events.lost`, its last line) and closed instead of holding every event. Outboxes used to be bounded by count only
/// (4,096 events): 15 MiB events grew the server 16 MB each until it died.
#[test]
fn a_subscriber_that_never_reads_is_dropped_by_bytes() {
    let mut srv = Server::start_limited(&["--max-total-output", "33554432"]);
    let mut idle = Lines::connect(srv.addr).expect("connect");
    idle.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"subscribe\",\"params\":[\"|big\"],\"id\":1}\n")
        .unwrap();
    let sub = idle.json(KIB).expect("subscribed");
    assert!(sub["result"].is_number(), "{sub}");
    // From now on the subscriber reads nothing.
    let blob = "z".repeat(2 * MIB);
    let mut publisher = Lines::connect(srv.addr).expect("connect");
    let mut received = Vec::new();
    for n in 0..100 {
        let call = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"Host.publishEvent\",\"params\":{{\"name\":\"|big|{n}\",\"params\":{{\"blob\":\"{blob}\"}}}},\"id\":{n}}}\n"
        );
        publisher.send(call.as_bytes()).unwrap();
        let r = publisher.json(KIB).expect("publish answered");
        received.push(r["result"].as_i64().unwrap_or(-1));
        if received.last() == Some(&0) {
            break;
        }
    }
    eprintln!("deliveries per publish: {received:?}");
    assert!(
        received.len() < 30 && received.last() == Some(&0),
        "the non-reader should be dropped once its outbox holds 16 MiB: {received:?}"
    );
    // It is told, as its last line, which event it lost first, then closed.
    let (closed, tail) = drain_until_closed(idle.s);
    assert!(closed, "its connection is closed");
    let last = tail
        .rsplit(|b| *b == b'\n')
        .find(|l| !l.is_empty())
        .unwrap_or(b"");
    let notice: serde_json::Value =
        serde_json::from_slice(last).unwrap_or_else(|e| panic!("{e}: {}", excerpt(last, 200)));
    assert_eq!(notice["method"], "events.lost", "{notice}");
    assert_eq!(notice["params"]["reason"], "outbox overflow");
    assert!(notice["params"]["first_lost"]
        .as_str()
        .is_some_and(|id| id.contains('-')));
    assert_peak_rss(&mut srv, 200, "a non-reading subscriber of 2 MiB events");
    let used = metric_value(
        &metrics_text(srv.addr),
        "rpcmux_budget_used_bytes{budget=\"output\"}",
    );
    assert_eq!(used, 0, "its events are given back");
}
