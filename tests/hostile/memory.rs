//! Memory held by calls in flight: batches whose `sleep` keeps a 1 MiB `echo` argument
//! alive, sent down raw TCP on one connection and on many; and one 16 MiB JSON echo over
//! HTTP. The real binary under an address-space limit; peak RSS (VmHWM) is asserted.

use crate::common::hostile::*;
use crate::common::ws;
use crate::common::*;
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

/// Peak RSS bound while 32 such batches run, however many connections carry them: 32
/// MiB of JSON on the wire, whose echo arguments decode to 512K `Value`s of 32 bytes
/// each (16 MiB per batch, 16x the text). The unfixed server (804be2d) peaked at 1.1-1.24
/// GiB (1,155 MiB on one connection, 1,185 on 32 in debug; 1,099 and 1,239 in release).
/// Measured at ed5c801: ~310-330 MiB on one connection (`max_in_flight_bytes`, 16 MiB,
/// admits 16 batches at once) and 617-649 MiB on 32 connections (all 32 decoded trees
/// alive at once), debug and release alike. The bound is the 32-connection figure with
/// ~40% margin. Since bbf6c75 the process budget is 32 MiB, which these 32 batches
/// (33.56 MB) just exceed once all are running: the bystander's pings then run in the
/// budget's small-request reserve (see starvation.rs).
const HELD_BATCHES_PEAK_MIB: u64 = 896;

/// How long an attacker waits for a batch's reply: its sleep is 20 s, and a connection
/// past `max_in_flight_bytes` has its later batches start only as earlier ones finish.
const HELD_REPLY_TIMEOUT: Duration = Duration::from_secs(45);

/// Send 32 held batches spread over `conns` connections and read every reply (so the
/// whole attack, decode to encode, happens before the peak is read), while a bystander
/// pings; then check the bystander, the replies and the peak.
fn held_batches(conns: usize, what: &str) {
    let mut srv = Server::start_limited(&[]);
    let frame_count = 32;
    let per_conn = frame_count / conns;
    let attackers: Vec<_> = (0..conns)
        .map(|c| {
            let addr = srv.addr;
            std::thread::spawn(move || -> Result<(), String> {
                let mut l = Lines::connect_within(addr, HELD_REPLY_TIMEOUT)?;
                // Writes block while the server is not reading this connection (past
                // its in-flight caps), so replies are read on another thread meanwhile:
                // a server whose unsent output is full stops reading too.
                let mut w = l.s.try_clone().map_err(|e| e.to_string())?;
                let writer = std::thread::spawn(move || -> Result<(), String> {
                    use std::io::Write;
                    for i in 0..per_conn {
                        w.write_all(&held_batch(c * per_conn + i))
                            .map_err(|e| format!("sending batch {i}: {e}"))?;
                    }
                    Ok(())
                });
                for i in 0..per_conn {
                    let v = l
                        .json(4 * MIB)
                        .map_err(|e| format!("connection {c}, reply {i}: {e}"))?;
                    let ok = v.as_array().is_some_and(|a| {
                        a.len() == 2
                            && a.iter().any(|m| m["result"] == 20000)
                            && a.iter()
                                .any(|m| m["result"].as_array().is_some_and(|r| r.len() == MIB / 2))
                    });
                    if !ok {
                        return Err(format!(
                            "connection {c}, reply {i}: {}",
                            excerpt(v.to_string().as_bytes(), 200)
                        ));
                    }
                }
                join(writer, "writer")
            })
        })
        .collect();
    let bystander = Bystander::start(ping_tcp, srv.addr, Duration::from_millis(100), 1000);
    let results: Vec<_> = attackers.into_iter().map(|h| join(h, "attacker")).collect();
    let seen = bystander.finish();
    // Every check, then one verdict: a failure shows the whole picture.
    for (i, r) in results.iter().enumerate() {
        if let Err(e) = r {
            eprintln!("{what}: attacker {i}: {e}");
        }
    }
    assert_all_answered(&seen, 5, what);
    assert!(
        results.iter().all(Result::is_ok),
        "{what}: some attackers' batches were not answered (see above)"
    );
    assert_peak_rss(&mut srv, HELD_BATCHES_PEAK_MIB, what);
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

/// Peak RSS bound for one 16 MiB JSON echo (an 8.4M-element array of 1s) over HTTP: the
/// body (16 MiB), the decoded array (8.4M `Value`s of 32 bytes: 256 MiB), the reply (16
/// MiB), and allocator and vector-growth slack. The unfixed server peaked at 1.24 GB in
/// the issue (here 820 MiB debug, 843-1,080 MiB release, with 64-byte `Value`s); at
/// ed5c801 it peaks at ~440 MiB (debug) and ~566 MiB (release).
const ECHO_16_MIB_PEAK_MIB: u64 = 768;

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

// ---------------------------------------------------------------------------------------
// Replies nobody reads

/// Clients that ask for big replies and never read them, per protocol: 300, or 100 where
/// the request is JSON (a debug build parses JSON at ~40 MB/s: 300 echos of 6 MiB would
/// take a minute a protocol; the driver and its budget are the same for all).
fn non_readers_of(proto: &str) -> usize {
    match proto {
        "msgpack" | "http" => 300,
        _ => 100,
    }
}

/// The size of the reply each non-reader asks for (an echo of this many bytes): over
/// what the kernel's send buffer takes on loopback (about 4 MiB), so that the rest is
/// the server's to hold.
const NON_READER_REPLY: usize = 6 * MIB;

/// The output budget the non-reader tests run with: small, so 300 clients of 6 MiB
/// replies (over 600 MiB held past the kernel's buffers) overrun it many times; the
/// default 256 MiB bounds the default server the same way.
const NON_READER_BUDGET: &str = "33554432";

/// Peak RSS bound with 300 non-readers of 6 MiB replies: the 32 MiB output budget; the
/// 40 MiB input budget, whose requests cost about three times their size while they run
/// (the body, its decoded value and the encoded reply: ~120 MiB); 64 KiB of input per
/// waiting connection (19 MiB); and the idle server (~60 MiB in debug). Measured: 173-253
/// MiB. Without an output budget the server holds what the kernel does not take of
/// every reply: 2,051 MiB for 300 msgpack-rpc non-readers.
const NON_READERS_PEAK_MIB: u64 = 320;

/// Connect with a 4 KiB receive buffer: the kernel then takes little of a reply the
/// client never reads, so the server is the one holding it (loopback buffers otherwise
/// swallow megabytes).
fn dial_small_rcvbuf(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpStream> {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    sock.set_recv_buffer_size(4096)?;
    sock.connect_timeout(&SockAddr::from(addr), ANSWER_TIMEOUT)?;
    let s: std::net::TcpStream = sock.into();
    // A write the server is not reading (its budgets are spent) gives up soon: the
    // attacker keeps the connection open and moves on.
    s.set_write_timeout(Some(Duration::from_millis(300)))?;
    Ok(s)
}

/// What one non-reader sends: a whole request for an echo of NON_READER_REPLY bytes.
fn non_reader_request(proto: &str) -> Vec<u8> {
    let big = "y".repeat(NON_READER_REPLY);
    let json =
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":1}}");
    match proto {
        "jsonrpc-tcp" => format!("{json}\n").into_bytes(),
        "msgpack" => {
            let mut out = bytes::BytesMut::new();
            let params = [rpcmux_value::Value::Bytes(vec![7u8; NON_READER_REPLY])];
            rpcmux_msgpack_rpc::encode_request(&mut out, 1, "echo", &params).unwrap();
            out.to_vec()
        }
        "stomp" => {
            let mut out = b"STOMP\naccept-version:1.2\nhost:localhost\n\n\0".to_vec();
            out.extend_from_slice(
                format!("SUBSCRIBE\nid:r\ndestination:{RESPONSES}\n\n\0").as_bytes(),
            );
            out.extend_from_slice(
                format!(
                    "SEND\ndestination:{REQUESTS}\ncontent-length:{}\n\n",
                    json.len()
                )
                .as_bytes(),
            );
            out.extend_from_slice(json.as_bytes());
            out.push(0);
            out
        }
        "websocket" => {
            let mut out = ws::upgrade_request("/", "").into_bytes();
            out.extend_from_slice(&ws::encode(true, 1, json.as_bytes()));
            out
        }
        // msgpack-rpc over HTTP: the reply is held by the HTTP layer (hyper and the
        // reply body), as a JSON or XML-RPC one is.
        "http" => post_bytes(
            &[("Content-Type", "application/msgpack")],
            &non_reader_request("msgpack"),
        ),
        _ => unreachable!("{proto}"),
    }
}

/// `n` connections with small receive buffers (on 6 threads), each sending `request`
/// whole and reading nothing: the ones that connected.
fn send_from_many(
    addr: std::net::SocketAddr,
    n: usize,
    request: Vec<u8>,
) -> Vec<std::net::TcpStream> {
    let request = std::sync::Arc::new(request);
    let workers: Vec<_> = (0..6)
        .map(|w| {
            let request = request.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for _ in (w..n).step_by(6) {
                    let Ok(mut s) = dial_small_rcvbuf(addr) else {
                        continue;
                    };
                    use std::io::Write;
                    let _ = s.write_all(&request);
                    held.push(s);
                }
                held
            })
        })
        .collect();
    workers
        .into_iter()
        .flat_map(|w| join(w, "a client"))
        .collect()
}

/// Clients of `proto` each ask for a 6 MiB reply and never read; meanwhile a
/// bystander is answered, a reading client's big reply is refused -32006 while the
/// budget is spent (or answered), and the peak RSS stays bounded.
fn non_readers(proto: &'static str) {
    let mut srv = Server::start_limited(&[
        "--max-total-output",
        NON_READER_BUDGET,
        "--send-timeout",
        "120",
    ]);
    let addr = srv.addr;
    let bystander = Bystander::start(ping_tcp, addr, Duration::from_millis(100), 10_000);
    let held = send_from_many(addr, non_readers_of(proto), non_reader_request(proto));
    let n = non_readers_of(proto);
    assert!(held.len() >= n * 9 / 10, "{} connected", held.len());
    // Let the server work through what it could read.
    std::thread::sleep(Duration::from_secs(4));
    let seen = bystander.finish();
    assert_all_answered(&seen, 3, &format!("{proto} non-readers"));
    let peak = assert_peak_rss(
        &mut srv,
        NON_READERS_PEAK_MIB,
        &format!("{n} {proto} non-readers"),
    );
    // The budget is what holds: the output gauge is at most the budget, and a reply
    // per worker thread admitted just before it was spent.
    let metrics = metrics_text(addr);
    let output = metric_value(&metrics, "rpcmux_budget_used_bytes{budget=\"output\"}");
    eprintln!("{proto}: output budget used {output} bytes, peak {peak} MiB");
    assert!(
        output > 16 * MIB as u64,
        "{proto}: only {output} bytes queued: the non-readers did not hold replies (the test proves nothing)"
    );
    assert!(
        output <= (32 + 2 * 6) as u64 * MIB as u64,
        "{proto}: {output} bytes queued for clients, over the 32 MiB budget"
    );
    drop(held);
    assert_alive(&mut srv, "after the non-readers left");
}

#[test]
fn non_readers_of_big_replies_over_jsonrpc_tcp_are_bounded() {
    non_readers("jsonrpc-tcp");
}

#[test]
fn non_readers_of_big_replies_over_msgpack_are_bounded() {
    non_readers("msgpack");
}

#[test]
fn non_readers_of_big_replies_over_stomp_are_bounded() {
    non_readers("stomp");
}

#[test]
fn non_readers_of_big_replies_over_websocket_are_bounded() {
    non_readers("websocket");
}

#[test]
fn non_readers_of_big_replies_over_http_are_bounded() {
    non_readers("http");
}

/// A big reply asked for while clients that do not read hold the whole output budget is
/// refused -32006 in the caller's protocol, and answered once they are gone (send_timeout).
#[test]
fn big_replies_wait_for_readers_and_send_timeout_frees_the_budget() {
    // send_timeout leaves the budget full long enough to be seen full on a loaded
    // machine (at 3 s, a CI run sharing its 2 cores once saw it emptied already).
    let srv = Server::start_limited(&["--max-total-output", "8388608", "--send-timeout", "8"]);
    let addr = srv.addr;
    let request = non_reader_request("jsonrpc-tcp");
    let mut held = Vec::new();
    for _ in 0..64 {
        let mut s = dial_small_rcvbuf(addr).unwrap();
        use std::io::Write;
        let _ = s.write_all(&request);
        held.push(s);
    }
    // The replies queue as the server gets to them (later on a loaded machine); they stay
    // queued until send_timeout (8 s) closes the non-readers, so poll rather than sleep.
    // Waited for until it holds still: every reply that fits is queued.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut before = u64::MAX;
    let queued = loop {
        let queued = metric_value(
            &metrics_text(addr),
            "rpcmux_budget_used_bytes{budget=\"output\"}",
        );
        let still = queued == before;
        if (queued > 4 * MIB as u64 && still) || std::time::Instant::now() > deadline {
            break queued;
        }
        before = queued;
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!("output budget used: {queued} bytes");
    let big = "z".repeat(512 * KIB);
    assert!(
        queued > 4 * MIB as u64,
        "the non-readers hold output ({queued} bytes)"
    );
    let call =
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":7}}\n");
    let mut l = Lines::connect(addr).unwrap();
    l.send(call.as_bytes()).unwrap();
    let v = l.json(2 * MIB).unwrap();
    assert_eq!(
        error_code(&v),
        Some(-32006),
        "{}",
        excerpt(v.to_string().as_bytes(), 300)
    );
    // A small call still goes.
    l.send(&jsonrpc("ping", "[]", "8")).unwrap();
    assert_eq!(l.json(KIB).unwrap()["result"], true);
    // send_timeout (8 s) closes the non-readers and frees what they held.
    assert!(
        srv.wait_log("send_timeout", Duration::from_secs(20)),
        "{}",
        srv.log_tail(20)
    );
    // Every non-reader's one request has been read and answered (or refused) by now,
    // and those that held output are closed: the budget empties.
    let end = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        let queued = metric_value(
            &metrics_text(addr),
            "rpcmux_budget_used_bytes{budget=\"output\"}",
        );
        if queued == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "{queued} bytes still queued for clients"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    l.send(call.as_bytes()).unwrap();
    let v = l.json(2 * MIB).unwrap();
    assert_eq!(
        v["result"].as_str().map(str::len),
        Some(512 * KIB),
        "{}",
        excerpt(v.to_string().as_bytes(), 200)
    );
    let metrics = metrics_text(addr);
    assert!(
        metric_value(
            &metrics,
            "rpcmux_limit_refusals_total{limit=\"send_timeout\"}"
        ) >= 1,
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("refusals"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    drop(held);
}

/// Half-sent frames are in the input budget: 32 connections each sending 15 MiB of a
/// raw-TCP JSON value that never ends held 535 MiB outside any budget. Now each read of
/// a large frame reserves its bytes first (the budget, 32 MiB, bounds them all, the
/// oldest one aside), a bystander's small calls go on in the reserve, and a large frame
/// that stops arriving is closed after `body_timeout`.
#[test]
fn half_sent_frames_are_bounded_by_the_input_budget() {
    let mut srv = Server::start_limited(&["--body-timeout", "3"]);
    let addr = srv.addr;
    let bystander = Bystander::start(ping_tcp, addr, Duration::from_millis(100), 10_000);
    let workers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for _ in 0..8 {
                    let Ok(mut s) = dial(addr, ANSWER_TIMEOUT) else {
                        continue;
                    };
                    s.set_write_timeout(Some(Duration::from_millis(500)))
                        .unwrap();
                    use std::io::Write;
                    // `["yyy...` of 15 MiB, never closed: a frame that never ends.
                    let _ = s.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"");
                    let chunk = vec![b'y'; MIB];
                    for _ in 0..15 {
                        if s.write_all(&chunk).is_err() {
                            break;
                        }
                    }
                    held.push(s);
                }
                held
            })
        })
        .collect();
    let held: Vec<_> = workers
        .into_iter()
        .flat_map(|w| join(w, "half-sender"))
        .collect();
    assert_eq!(held.len(), 32);
    let input = metric_value(
        &metrics_text(addr),
        "rpcmux_budget_used_bytes{budget=\"input\"}",
    );
    eprintln!("input budget used: {input} bytes");
    let peak = assert_peak_rss(&mut srv, HALF_SENT_PEAK_MIB, "32 half-sent 15 MiB frames");
    // The stalled frames are closed after body_timeout (3 s), their bytes given back.
    assert!(
        srv.wait_log("large frame stalled", Duration::from_secs(20)),
        "{}",
        srv.log_tail(20)
    );
    let seen = bystander.finish();
    assert_all_answered(&seen, 5, "half-sent frames");
    eprintln!("peak {peak} MiB");
    drop(held);
}

/// Peak RSS bound for 32 half-sent 15 MiB frames: the 32 MiB budget (with the reserve
/// and one oldest frame past it, ~56 MiB) and the idle server (~60 MiB in debug). The
/// unfixed server held 15 MiB per connection: 535 MiB more.
const HALF_SENT_PEAK_MIB: u64 = 192;

/// Clients that ask for a big reply and then read it slowly (a few bytes now and then)
/// hold its whole allocation until the last byte leaves: the reply's charge must follow
/// that allocation, not the bytes still unsent (issue 46: 200 such clients of 8 MiB
/// replies held 1,963 MB against a budget showing 191 MiB, and every new big reply was
/// still admitted). With a 64 MiB output budget and 6 MiB replies, of which the kernel
/// takes about 4 MiB each, a charge by the unsent bytes admits about 32 replies past
/// the budget; a charge by the allocation about 64 / 6, plus one per worker thread
/// admitted just before the budget was spent.
#[test]
fn slow_readers_of_big_replies_are_charged_what_their_replies_hold() {
    let mut srv =
        Server::start_limited(&["--max-total-output", "67108864", "--send-timeout", "120"]);
    let addr = srv.addr;
    let baseline = srv.rss_mib();
    let mut held = send_from_many(addr, 60, non_reader_request("msgpack"));
    assert!(held.len() >= 54, "{} connected", held.len());
    std::thread::sleep(Duration::from_secs(4));
    // Each reads its first bytes: a msgpack-rpc response `[1, msgid, error, result]`
    // whose error is nil (0xc0) was admitted; a -32006 error was refused.
    let (mut admitted, mut refused) = (0, 0);
    for _round in 0..3 {
        for s in &mut held {
            use std::io::Read;
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            let mut head = [0u8; 1024];
            let _ = s.read(&mut head);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    for s in &mut held {
        use std::io::Read;
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 1];
        // The first 3 KiB were read above; what comes now is the rest of a big reply
        // (admitted) or nothing (a small error reply, all read).
        match s.read(&mut b) {
            Ok(1) => admitted += 1,
            _ => refused += 1,
        }
    }
    let output = metric_value(
        &metrics_text(addr),
        "rpcmux_budget_used_bytes{budget=\"output\"}",
    );
    let rss = srv.rss_mib();
    eprintln!(
        "slow readers: {admitted} big replies admitted, {refused} refused; output charged {} MiB; RSS {baseline} -> {rss} MiB",
        output / MIB as u64
    );
    assert!(
        refused > 0,
        "every big reply admitted: the budget did not hold"
    );
    assert!(
        admitted <= 64 / 6 + 6 + 2,
        "{admitted} replies of 6 MiB admitted against a 64 MiB budget: charged by unsent bytes, not by what they hold"
    );
    assert!(
        output >= (admitted as u64 - 2) * 6 * MIB as u64 * 9 / 10,
        "{admitted} replies held, only {output} bytes charged"
    );
    drop(held);
    assert_alive(&mut srv, "after the slow readers left");
}
