//! Slow HTTP bodies: one byte per TCP segment (each byte used to pin a whole 8 KiB read
//! buffer until the body was complete), a body that stalls (`body_timeout`), and a body
//! trickled at one byte a second (`min_body_rate`). The real binary, under an
//! address-space limit.

use crate::common::hostile::*;
use crate::common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// RSS growth allowed while a 20,000-byte body arrives one byte per segment. The body
/// itself, its parse and its reply are well under 1 MiB; the unfixed server grew by
/// ~160 MB (8 KiB per byte).
const ONE_BYTE_SEGMENTS_GROWTH_MIB: u64 = 16;

#[test]
fn body_sent_one_byte_per_segment_does_not_pin_memory_per_byte() {
    let mut srv = Server::start_limited(&[]);
    ping_http(srv.addr).expect("warm-up ping");
    let before = srv.rss_mib();

    // echo("zzz...") whose whole JSON body is exactly 20,000 bytes.
    let overhead = jsonrpc("echo", "[\"\"]", "1").len();
    let text = "z".repeat(20_000 - overhead);
    let body = jsonrpc("echo", &format!("[\"{text}\"]"), "1");
    assert_eq!(body.len(), 20_000);

    let mut s = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    let head = post_bytes(&[JSON], &body);
    let (head, body) = head.split_at(head.len() - body.len());
    s.write_all(head).unwrap();
    let started = Instant::now();
    for b in body {
        // TCP_NODELAY is set: each write is its own segment; the pause lets the server
        // read it on its own.
        s.write_all(std::slice::from_ref(b))
            .expect("the server keeps reading a body that arrives steadily");
        std::thread::sleep(Duration::from_micros(100));
    }
    eprintln!("20,000 one-byte segments sent in {:?}", started.elapsed());
    let r = read_response(&mut s, 64 * KIB).expect("the reply");
    assert_eq!(r.status, 200, "{}", excerpt(&r.body, 300));
    assert_eq!(r.json().unwrap()["result"], text.as_str());

    let peak = assert_peak_rss(
        &mut srv,
        before + ONE_BYTE_SEGMENTS_GROWTH_MIB,
        "one-byte segments",
    );
    eprintln!(
        "RSS before {before} MiB, peak {peak} MiB: growth {} MiB for a 20,000-byte body",
        peak.saturating_sub(before)
    );
}

/// Wait for a 408 and then the close, on a connection whose body has stopped arriving.
fn expect_408_then_close(s: &mut std::net::TcpStream, what: &str) -> Duration {
    let started = Instant::now();
    let r = read_response(s, 64 * KIB)
        .unwrap_or_else(|e| panic!("{what}: wanted 408 Request Timeout, got: {e}"));
    let took = started.elapsed();
    assert_eq!(r.status, 408, "{what}: {} {}", r.head, r.text());
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => {}
        Ok(n) => panic!(
            "{what}: more bytes after the 408: {:?}",
            String::from_utf8_lossy(&b[..n])
        ),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("{what}: the connection stayed open after the 408: {e}"),
    }
    took
}

#[test]
fn stalled_body_gets_408_after_body_timeout() {
    let mut srv = Server::start_limited(&["--body-timeout", "1"]);
    let mut s = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    s.write_all(
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"",
    )
    .unwrap();
    // Then silence: 990 bytes never come.
    let took = expect_408_then_close(&mut s, "stalled body");
    eprintln!("stalled body answered 408 after {took:?} (body_timeout 1 s)");
    // Others are served meanwhile and after.
    ping_http(srv.addr).expect("ping after the stalled body");
    assert_alive(&mut srv, "stalled body");
}

#[test]
fn body_trickled_one_byte_a_second_is_cut_by_min_body_rate() {
    // Gaps of 1 s stay under body_timeout (2 s): only the average rate (1 B/s against
    // the default 4096 B/s, judged once body_timeout has passed) can cut this body.
    let mut srv = Server::start_limited(&["--body-timeout", "2"]);
    let mut s = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    s.write_all(
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
    )
    .unwrap();
    let mut writer = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // At most 20 bytes (20 s): bounded even if the server never cuts it.
        for b in b"{\"jsonrpc\":\"2.0\",\"m".iter() {
            if writer.write_all(std::slice::from_ref(b)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let took = expect_408_then_close(&mut s, "trickled body");
    eprintln!("trickled body answered 408 after {took:?} (body_timeout 2 s, 1 B/s)");
    drop(s);
    join(trickle, "trickle");
    ping_http(srv.addr).expect("ping after the trickled body");
    assert_alive(&mut srv, "trickled body");
}
