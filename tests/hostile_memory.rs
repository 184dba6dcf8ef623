//! Memory held by calls in flight: batches whose `sleep` keeps a 1 MiB `echo` argument
//! alive, sent down raw TCP on one connection and on many; and one 16 MiB JSON echo over
//! HTTP. The real binary under an address-space limit; peak RSS (VmHWM) is asserted.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use common::*;
use hostile::*;
use std::time::Duration;

/// One raw-TCP frame: a batch `[sleep(20000), echo(<1 MiB JSON array of 1s>)]`. The sleep
/// keeps the batch (and, on the unfixed server, the echo's parsed argument and result)
/// in flight for 20 s.
fn held_batch(n: usize) -> Vec<u8> {
    let mut v = format!(
        "[{{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":[20000],\"id\":\"s{n}\"}},{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":\"e{n}\",\"params\":["
    )
    .into_bytes();
    v.extend_from_slice(&ones_array(MIB + 1));
    v.extend_from_slice(b"]}]\n");
    v
}

/// Peak RSS bound while 32 such frames are sent (32 MiB of JSON; parsed, ~30x that).
/// The unfixed server held ~1 GB; the fixed one stops reading past
/// `max_in_flight_bytes` (16 MiB per connection) and `max_total_in_flight_bytes`
/// (64 MiB for the process).
const HELD_BATCHES_PEAK_MIB: u64 = 512;

/// Send 32 held batches spread over `conns` connections, give the server time to read
/// what it will, then check the bystander and the peak.
fn held_batches(conns: usize, what: &str) {
    let mut srv = Server::start_limited(&[]);
    let frame_count = 32;
    let per_conn = frame_count / conns;
    let senders: Vec<_> = (0..conns)
        .map(|c| {
            let addr = srv.addr;
            std::thread::spawn(move || -> Result<Lines, String> {
                // Writes may block once the server stops reading: the write timeout
                // (ANSWER_TIMEOUT) ends them; what was sent is what the server holds.
                let mut l = Lines::connect(addr)?;
                for i in 0..per_conn {
                    if let Err(e) = l.send(&held_batch(c * per_conn + i)) {
                        eprintln!("connection {c}: frame {i} not fully sent ({e}): the server stopped reading");
                        break;
                    }
                }
                Ok(l)
            })
        })
        .collect();
    // Meanwhile a bystander's pings are answered.
    let bystander = Bystander::start(ping_tcp, srv.addr, Duration::from_millis(100), 1000);
    let held: Vec<_> = senders
        .into_iter()
        .map(|h| join(h, "sender").expect("attacker connection"))
        .collect();
    // Let the server decode and start whatever it accepted (the calls stay in flight
    // for 20 s): wait until its RSS stops growing, at most 12 s.
    let settled = settle_rss(&mut srv, Duration::from_secs(12));
    eprintln!("{what}: RSS settled at {settled} MiB");
    let seen = bystander.finish();
    assert_peak_rss(&mut srv, HELD_BATCHES_PEAK_MIB, what);
    assert_all_answered(&seen, 1, what);
    drop(held);
    ping_tcp(srv.addr).expect("ping after the attack");
}

#[test]
fn held_batches_on_one_connection_keep_memory_bounded() {
    held_batches(1, "32 held 1 MiB batches on one connection");
}

#[test]
fn held_batches_on_32_connections_keep_memory_bounded() {
    held_batches(32, "32 held 1 MiB batches on 32 connections");
}

/// Peak RSS bound for one 16 MiB JSON echo (an 8.4M-element array of 1s) over HTTP:
/// body, parsed array, encoded reply. The unfixed server peaked at 1.24 GB.
const ECHO_16_MIB_PEAK_MIB: u64 = 640;

#[test]
fn http_json_echo_of_16_mib_has_a_bounded_peak() {
    let mut srv = Server::start_limited(&[]);
    let req = echo_ones_request(16 * MIB, 1);
    let r = post_within(srv.addr, &[JSON], &req, 20 * MIB, Duration::from_secs(60))
        .expect("the 16 MiB echo is answered");
    assert_eq!(r.status, 200, "{}", excerpt(&r.body, 300));
    // The result is the array, byte for byte (compared as bytes: parsing 8.4M JSON
    // numbers in a debug test costs more than the check is worth).
    let at = r
        .body
        .windows(9)
        .position(|w| w == b"\"result\":")
        .unwrap_or_else(|| panic!("no result: {}", excerpt(&r.body, 300)));
    let start = req.windows(10).position(|w| w == b"\"params\":[").unwrap() + 10;
    let array = &req[start..req.len() - 2];
    assert_eq!(
        r.body.get(at + 9..at + 9 + array.len()),
        Some(array),
        "the echoed array differs"
    );
    assert_peak_rss(
        &mut srv,
        ECHO_16_MIB_PEAK_MIB,
        "one 16 MiB JSON echo over HTTP",
    );
    ping_http(srv.addr).expect("ping after the echo");
}
