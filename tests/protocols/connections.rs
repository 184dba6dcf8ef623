//! The listener and sniffer under awkward clients: slow, silent, garbage, too many,
//! and a graceful shutdown with calls in flight.

use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

const PING: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n";

fn ping_tcp(addr: std::net::SocketAddr) -> serde_json::Value {
    let s = connect(addr);
    (&s).write_all(PING).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    json(line.as_bytes())
}

#[test]
fn client_sending_one_byte_at_a_time_works_for_each_protocol() {
    let srv = Server::start(&[]);
    let http = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\nConnection: close\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}";
    for (req, want_prefix) in [
        (PING, &b"{\"jsonrpc\""[..]),
        (&http[..], &b"HTTP/1.1 200"[..]),
    ] {
        let mut s = connect(srv.addr);
        for b in req {
            s.write_all(&[*b]).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut buf = vec![0u8; 512];
        let n = s.read(&mut buf).unwrap();
        assert!(
            buf[..n].starts_with(want_prefix),
            "{:?}",
            String::from_utf8_lossy(&buf[..n])
        );
    }
}

#[test]
fn silent_client_is_closed_at_the_sniff_deadline_while_others_are_served() {
    let srv = Server::start(&["--sniff-timeout", "1"]);
    let mut silent = connect(srv.addr);
    let started = Instant::now();
    // others are served meanwhile
    for _ in 0..5 {
        assert_eq!(ping_tcp(srv.addr)["result"], true);
    }
    let mut buf = [0u8; 16];
    let n = silent.read(&mut buf).expect("server closes, not a timeout");
    assert_eq!(n, 0, "closed without a reply");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert!(
        srv.wait_log("sniff deadline passed", Duration::from_secs(2)),
        "{}",
        srv.log()
    );
}

#[test]
fn garbage_first_bytes_are_closed_and_logged_http_like_garbage_gets_400() {
    let srv = Server::start(&[]);
    let out = exchange(srv.addr, b"\x00\x01\x02garbage\r\n");
    assert!(out.is_empty(), "{out:?}");
    assert!(
        srv.wait_log("unknown protocol", Duration::from_secs(2)),
        "{}",
        srv.log()
    );
    let out = exchange(srv.addr, b"HELLO THERE\r\n\r\n");
    assert!(
        out.starts_with(b"HTTP/1.1 400"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    assert_eq!(ping_tcp(srv.addr)["result"], true, "still serving");
}

#[test]
fn connections_over_the_cap_are_closed_at_once() {
    let srv = Server::start(&["--max-connections", "3"]);
    let held: Vec<_> = (0..3).map(|_| connect(srv.addr)).collect();
    for h in &held {
        (&*h).write_all(b"{").unwrap(); // sniffed as JSON-RPC, held open
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut extra = connect(srv.addr);
    let mut buf = [0u8; 8];
    assert_eq!(extra.read(&mut buf).unwrap_or(0), 0, "over the cap: closed");
    assert!(
        srv.wait_log("connection cap reached", Duration::from_secs(2)),
        "{}",
        srv.log()
    );
    drop(held);
    // the cap frees as connections close
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let s = connect(srv.addr);
        (&s).write_all(PING).unwrap();
        let mut line = String::new();
        if BufReader::new(s).read_line(&mut line).unwrap_or(0) > 0 {
            assert_eq!(json(line.as_bytes())["result"], true);
            break;
        }
        assert!(Instant::now() < deadline, "cap never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn connections_still_sniffing_are_capped() {
    let srv = Server::start(&["--max-sniffing", "2"]);
    let _a = connect(srv.addr);
    let _b = connect(srv.addr);
    std::thread::sleep(Duration::from_millis(100));
    let mut c = connect(srv.addr);
    let mut buf = [0u8; 8];
    assert_eq!(c.read(&mut buf).unwrap_or(0), 0);
    assert!(srv.wait_log(
        "too many connections still sniffing",
        Duration::from_secs(2)
    ));
}

#[test]
fn sigterm_answers_calls_in_flight_then_exits_zero() {
    let mut srv = Server::start(&[]);
    let tcp = connect(srv.addr);
    (&tcp)
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":[700],\"id\":7}\n")
        .unwrap();
    let addr = srv.addr;
    let http = std::thread::spawn(move || {
        http_post(
            addr,
            None,
            br#"{"jsonrpc":"2.0","method":"sleep","params":[700],"id":8}"#,
        )
    });
    std::thread::sleep(Duration::from_millis(200));
    srv.sigterm();
    let mut line = String::new();
    BufReader::new(&tcp).read_line(&mut line).unwrap();
    assert_eq!(json(line.as_bytes())["result"], 700, "{line}");
    let (st, _, body) = http.join().unwrap();
    assert_eq!((st, json(&body)["result"].clone()), (200, 700.into()));
    let status = srv.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    // no new connections once shutting down
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn several_listeners_ipv4_and_ipv6_and_a_config_file() {
    let dir = std::env::temp_dir().join(format!("rpcmux-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("rpcmux.toml");
    std::fs::write(
        &cfg,
        "listen = [\"127.0.0.1:0\", \"[::1]:0\"]\n[limits]\nmax_in_flight = 4\n",
    )
    .unwrap();
    let srv = Server::spawn(&[
        "serve",
        "--config",
        cfg.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--listen",
        "[::1]:0",
    ]);
    assert_eq!(srv.addrs.len(), 2);
    assert!(srv.addrs[1].is_ipv6());
    for a in &srv.addrs {
        assert_eq!(ping_tcp(*a)["result"], true);
    }
}

/// Clients that sit idle on stream connections do not hold up the exit: a connection
/// that wrote nothing lately closes at once, without waiting for the client's EOF.
#[test]
fn idle_stream_connections_do_not_delay_the_exit() {
    let mut srv = Server::start(&[]);
    let mut idle = Vec::new();
    for _ in 0..4 {
        let mut s = connect(srv.addr);
        s.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n")
            .unwrap();
        let mut line = String::new();
        BufReader::new(s.try_clone().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("\"result\":true"), "{line}");
        idle.push(s);
    }
    // Longer than the linger that protects a reply just written.
    std::thread::sleep(Duration::from_millis(700));
    let start = Instant::now();
    srv.sigterm();
    let status = srv.wait_exit(Duration::from_secs(5));
    assert!(status.success(), "{status}");
    assert!(
        start.elapsed() < Duration::from_millis(450),
        "exit took {:?} with idle clients",
        start.elapsed()
    );
    drop(idle);
}
