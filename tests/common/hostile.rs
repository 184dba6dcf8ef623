//! Helpers for the hostile end-to-end tests (`tests/hostile/`): clients that never
//! wait without a timeout and never read more than a cap, bystanders that keep calling
//! while an attack runs, and request builders for the attacks.
//!
//! Use with `use crate::common::hostile::*;`. Every socket
//! here targets 127.0.0.x; every wait is bounded, so a server that hangs, balloons or
//! dies makes a test fail cleanly instead of hanging it.
#![allow(dead_code)]

use crate::common::Server;
use bytes::BytesMut;
use rpcmux_stomp::{Command, Frame, Item, StompCodec};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio_util::codec::{Decoder, Encoder};

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;

/// How long anyone (bystander or attacker) waits for an answer before the test fails.
/// Generous: the machine is shared and the binary is a debug build.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Connect with read and write timeouts and TCP_NODELAY.
pub fn dial(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Connect from a chosen local address (`127.0.0.2`, say: Linux routes all of 127/8 to
/// the loopback interface), so the server sees a different client address.
pub fn dial_from(
    local: std::net::IpAddr,
    addr: SocketAddr,
    timeout: Duration,
) -> io::Result<TcpStream> {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    sock.bind(&SockAddr::from(SocketAddr::new(local, 0)))?;
    sock.connect_timeout(&SockAddr::from(addr), timeout)?;
    let s: TcpStream = sock.into();
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    Ok(s)
}

fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".into(),
        _ => e.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// HTTP

/// One HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Resp {
    /// A header's value (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; `Err` with a short excerpt when it is not.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body)
            .map_err(|e| format!("reply body is not JSON ({e}): {}", excerpt(&self.body, 300)))
    }
}

/// The first `n` bytes of `b`, lossily, with the total length.
pub fn excerpt(b: &[u8], n: usize) -> String {
    if b.len() <= n {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        format!(
            "{:?}... ({} bytes)",
            String::from_utf8_lossy(&b[..n]),
            b.len()
        )
    }
}

/// Read one HTTP response from `s`: the head, then a Content-Length body (or, without
/// one, everything to EOF). A body longer than `cap` is not read: that is an `Err`
/// (an amplified reply is the failure), as is a timeout or an early close.
pub fn read_response(s: &mut TcpStream, cap: usize) -> Result<Resp, String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 64 * KIB];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 64 * KIB {
            return Err(format!("HTTP head over 64 KiB: {}", excerpt(&buf, 200)));
        }
        match s.read(&mut chunk) {
            Ok(0) => {
                return Err(format!(
                    "connection closed before a complete HTTP head (got {})",
                    excerpt(&buf, 200)
                ))
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => {
                return Err(format!(
                    "no HTTP reply: {} (got {})",
                    describe(&e),
                    excerpt(&buf, 200)
                ))
            }
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    let mut body = buf[head_end + 4..].to_vec();
    let length = head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    });
    if head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"))
    {
        return Err(format!("chunked replies are not expected here: {head}"));
    }
    match length {
        Some(n) if n > cap => {
            return Err(format!(
                "reply body of {n} bytes (status {status}) is over this test's {cap}-byte cap"
            ))
        }
        Some(n) => {
            while body.len() < n {
                let want = (n - body.len()).min(chunk.len());
                match s.read(&mut chunk[..want]) {
                    Ok(0) => return Err(format!("closed after {} of {n} body bytes", body.len())),
                    Ok(k) => body.extend_from_slice(&chunk[..k]),
                    Err(e) => {
                        return Err(format!(
                            "reading the body: {} after {} of {n} bytes",
                            describe(&e),
                            body.len()
                        ))
                    }
                }
            }
            body.truncate(n);
        }
        None => loop {
            if body.len() > cap {
                return Err(format!("reply body over this test's {cap}-byte cap"));
            }
            match s.read(&mut chunk) {
                Ok(0) => break,
                Ok(k) => body.extend_from_slice(&chunk[..k]),
                Err(e) => return Err(format!("reading the body to EOF: {}", describe(&e))),
            }
        },
    }
    Ok(Resp { status, head, body })
}

/// `GET /metrics` (from loopback, which may read it), the exposition as text.
pub fn metrics_text(addr: SocketAddr) -> String {
    let mut s = dial(addr, ANSWER_TIMEOUT).expect("connect for /metrics");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .expect("ask for /metrics");
    read_response(&mut s, 16 * MIB).expect("/metrics").text()
}

/// A sample's value from the Prometheus text format (0 when absent).
pub fn metric_value(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse::<f64>().ok())
        .unwrap_or(0.0) as u64
}

/// The bytes of `POST / HTTP/1.1` with `Connection: close`, a Content-Length and `headers`.
pub fn post_bytes(headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut req = format!(
        "POST /RPC2 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// POST `body` and read the reply (at most `cap` body bytes), every step within `timeout`.
/// A write that fails (the server answered early and closed) still reads the reply.
pub fn post_within(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
    cap: usize,
    timeout: Duration,
) -> Result<Resp, String> {
    let mut s = dial(addr, timeout).map_err(|e| format!("connect: {e}"))?;
    let write = s.write_all(&post_bytes(headers, body));
    match read_response(&mut s, cap) {
        Ok(r) => Ok(r),
        Err(e) => match write {
            Err(w) => Err(format!("sending the request: {}; then {e}", describe(&w))),
            Ok(()) => Err(e),
        },
    }
}

pub fn post(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
    cap: usize,
) -> Result<Resp, String> {
    post_within(addr, headers, body, cap, ANSWER_TIMEOUT)
}

pub const JSON: (&str, &str) = ("Content-Type", "application/json");
pub const XML: (&str, &str) = ("Content-Type", "text/xml");
pub const GZIP: (&str, &str) = ("Content-Encoding", "gzip");

/// A JSON-RPC 2.0 request; `params` is JSON text.
pub fn jsonrpc(method: &str, params: &str, id: &str) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{params},\"id\":{id}}}")
        .into_bytes()
}

/// An XML-RPC call whose params are already XML (`<param>...</param>` elements).
pub fn xmlrpc_call(method: &str, params_xml: &str) -> Vec<u8> {
    format!(
        "<?xml version=\"1.0\"?><methodCall><methodName>{method}</methodName><params>{params_xml}</params></methodCall>"
    )
    .into_bytes()
}

/// The JSON-RPC `error.code` of a reply value, if it is an error object.
pub fn error_code(v: &serde_json::Value) -> Option<i64> {
    v.get("error")?.get("code")?.as_i64()
}

/// The XML-RPC `faultCode` of a reply body, if it is a fault.
pub fn fault_code(xml: &str) -> Option<i64> {
    if !xml.contains("<fault>") {
        return None;
    }
    let at = xml.find("faultCode")?;
    let rest = &xml[at..];
    let start = rest
        .find("<int>")
        .map(|i| i + 5)
        .or_else(|| rest.find("<i4>").map(|i| i + 4))?;
    let end = rest[start..].find('<')? + start;
    rest[start..end].trim().parse().ok()
}

/// `ping` over JSON-RPC/HTTP on a fresh connection; `Ok(())` only for `result: true`.
pub fn ping_http(addr: SocketAddr) -> Result<(), String> {
    let r = post(addr, &[JSON], &jsonrpc("ping", "[]", "1"), 64 * KIB)?;
    let v = r.json()?;
    if r.status == 200 && v["result"] == true {
        Ok(())
    } else {
        Err(format!("ping answered {} {}", r.status, r.text()))
    }
}

/// `ping` over raw-TCP JSON-RPC on a fresh connection.
pub fn ping_tcp(addr: SocketAddr) -> Result<(), String> {
    let mut c = Lines::connect(addr)?;
    c.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n")?;
    let line = c.line(64 * KIB)?;
    let v: serde_json::Value =
        serde_json::from_str(&line).map_err(|e| format!("bad reply line {e}: {line:?}"))?;
    if v["result"] == true {
        Ok(())
    } else {
        Err(format!("ping answered {line:?}"))
    }
}

// ---------------------------------------------------------------------------------------
// Raw-TCP JSON-RPC

/// A raw-TCP JSON-RPC connection read line by line, every read bounded.
pub struct Lines {
    pub s: TcpStream,
    r: BufReader<TcpStream>,
}

impl Lines {
    pub fn connect(addr: SocketAddr) -> Result<Lines, String> {
        Self::connect_within(addr, ANSWER_TIMEOUT)
    }

    pub fn connect_within(addr: SocketAddr, timeout: Duration) -> Result<Lines, String> {
        let s = dial(addr, timeout).map_err(|e| format!("connect: {e}"))?;
        Ok(Self::over(s))
    }

    pub fn over(s: TcpStream) -> Lines {
        let r = BufReader::with_capacity(256 * KIB, s.try_clone().expect("clone socket"));
        Lines { s, r }
    }

    pub fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.s
            .write_all(bytes)
            .map_err(|e| format!("send: {}", describe(&e)))
    }

    /// The next line (without its `\n`); `Err` on timeout, EOF, or a line over `cap`.
    pub fn line(&mut self, cap: usize) -> Result<String, String> {
        let mut buf = Vec::new();
        match (&mut self.r)
            .take(cap as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) => Err("connection closed, no reply line".into()),
            Ok(_) if buf.last() == Some(&b'\n') => {
                buf.pop();
                String::from_utf8(buf).map_err(|e| format!("reply line not UTF-8: {e}"))
            }
            Ok(_) if buf.len() > cap => Err(format!("reply line over this test's {cap}-byte cap")),
            Ok(_) => Err(format!("closed inside a line: {}", excerpt(&buf, 200))),
            Err(e) => Err(format!(
                "no reply line: {} (partial {})",
                describe(&e),
                excerpt(&buf, 200)
            )),
        }
    }

    /// The next line as JSON.
    pub fn json(&mut self, cap: usize) -> Result<serde_json::Value, String> {
        let line = self.line(cap)?;
        serde_json::from_str(&line)
            .map_err(|e| format!("bad JSON line ({e}): {}", excerpt(line.as_bytes(), 300)))
    }

    /// Is the connection closed by the server (EOF within `within`)?
    pub fn closed_within(&mut self, within: Duration) -> bool {
        let _ = self.s.set_read_timeout(Some(within));
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0))
    }
}

// ---------------------------------------------------------------------------------------
// STOMP

pub const REQUESTS: &str = "jms.topic.vdsm_requests";
pub const RESPONSES: &str = "jms.topic.vdsm_responses";
pub const EVENTS: &str = "jms.queue.events";

/// A raw STOMP 1.2 client over a blocking socket with timeouts.
pub struct Stomp {
    pub s: TcpStream,
    codec: StompCodec,
    buf: BytesMut,
}

impl Stomp {
    /// Connected (`STOMP accept-version:1.2`, no heart-beats).
    pub fn open(addr: SocketAddr) -> Result<Stomp, String> {
        let s = dial(addr, ANSWER_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
        let limits = rpcmux_stomp::Limits {
            max_frame: 64 * MIB,
            ..Default::default()
        };
        let mut c = Stomp {
            s,
            codec: StompCodec::new(limits),
            buf: BytesMut::new(),
        };
        c.send(
            &Frame::new(Command::Stomp)
                .header("accept-version", "1.2")
                .header("host", "localhost"),
        )?;
        let f = c.frame()?;
        if f.command != Command::Connected {
            return Err(format!("expected CONNECTED, got {f:?}"));
        }
        Ok(c)
    }

    pub fn send(&mut self, f: &Frame) -> Result<(), String> {
        let mut out = BytesMut::new();
        self.codec.encode(f, &mut out).map_err(|e| e.to_string())?;
        self.s
            .write_all(&out)
            .map_err(|e| format!("STOMP send: {}", describe(&e)))
    }

    pub fn subscribe(&mut self, id: &str, dest: &str) -> Result<(), String> {
        self.send(
            &Frame::new(Command::Subscribe)
                .header("id", id)
                .header("destination", dest),
        )
    }

    /// SEND a JSON-RPC body to the request destination (replies to `reply_to` if given).
    pub fn call(&mut self, body: Vec<u8>, reply_to: Option<&str>) -> Result<(), String> {
        let mut f = Frame::new(Command::Send)
            .header("destination", REQUESTS)
            .header("content-type", "application/json")
            .with_body(body);
        if let Some(r) = reply_to {
            f.push_header("reply-to", r);
        }
        self.send(&f)
    }

    /// The next frame (heart-beats skipped); `Err` on timeout or close.
    pub fn frame(&mut self) -> Result<Frame, String> {
        let mut chunk = vec![0u8; 256 * KIB];
        loop {
            match self.codec.decode(&mut self.buf) {
                Ok(Some(Item::Frame(f))) => return Ok(f),
                Ok(Some(Item::Heartbeat)) => continue,
                Ok(None) => {}
                Err(e) => return Err(format!("bad STOMP from the server: {e}")),
            }
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("server closed the STOMP connection".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("no STOMP frame: {}", describe(&e))),
            }
        }
    }
}

/// A MESSAGE frame's body as JSON.
pub fn frame_json(f: &Frame) -> Result<serde_json::Value, String> {
    serde_json::from_slice(&f.body)
        .map_err(|e| format!("MESSAGE body not JSON ({e}): {}", excerpt(&f.body, 300)))
}

// ---------------------------------------------------------------------------------------
// Bodies

/// `[1,1,...,1]`, exactly `len` bytes when `len` is odd (one less when even); `len >= 3`.
pub fn ones_array(len: usize) -> Vec<u8> {
    let n = (len - 1) / 2;
    let mut v = Vec::with_capacity(2 * n + 1);
    v.push(b'[');
    for i in 0..n {
        if i > 0 {
            v.push(b',');
        }
        v.push(b'1');
    }
    v.push(b']');
    v
}

/// A JSON-RPC `echo` request whose one param is a `[1,1,...]` array, the whole request
/// exactly `total` bytes or one less.
pub fn echo_ones_request(total: usize, id: u32) -> Vec<u8> {
    let head = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":{id},\"params\":[");
    let tail = "]}";
    let mut v = head.into_bytes();
    v.extend_from_slice(&ones_array(total - v.len() - tail.len()));
    v.extend_from_slice(tail.as_bytes());
    v
}

pub fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// zlib format (RFC 1950), what HTTP calls `deflate` and what Perl's
/// `Compress::Zlib::compress` (RPC::XML's compression) produces.
pub fn zlib(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// Seeded SplitMix64: reproducible "random" data without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

// ---------------------------------------------------------------------------------------
// Memory

/// Fail unless the server is alive and its peak RSS (VmHWM) is at most `bound_mib`.
pub fn assert_peak_rss(srv: &mut Server, bound_mib: u64, what: &str) -> u64 {
    if let Some(status) = srv.exited() {
        panic!(
            "{what}: the server died ({status}); log tail:\n{}",
            srv.log_tail(30)
        );
    }
    let peak = srv.peak_rss_mib();
    eprintln!("{what}: server peak RSS {peak} MiB (bound {bound_mib} MiB)");
    assert!(
        peak <= bound_mib,
        "{what}: server peak RSS {peak} MiB is over the {bound_mib} MiB bound"
    );
    peak
}

/// Wait until the server's RSS has stopped growing (under 2 MiB in a second), at most
/// `within`; returns the RSS in MiB. Panics if the server dies meanwhile.
pub fn settle_rss(srv: &mut Server, within: Duration) -> u64 {
    let end = Instant::now() + within;
    let mut last = srv.rss_mib();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        assert_alive(srv, "waiting for the RSS to settle");
        let now = srv.rss_mib();
        if now < last + 2 || Instant::now() >= end {
            return now;
        }
        last = now;
    }
}

/// Fail if the server has exited.
pub fn assert_alive(srv: &mut Server, what: &str) {
    if let Some(status) = srv.exited() {
        panic!(
            "{what}: the server died ({status}); log tail:\n{}",
            srv.log_tail(30)
        );
    }
}

// ---------------------------------------------------------------------------------------
// Bystanders

/// What a bystander saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub ok: usize,
    pub failed: Vec<String>,
    pub latencies: Vec<Duration>,
}

impl Seen {
    pub fn max(&self) -> Duration {
        self.latencies.iter().copied().max().unwrap_or_default()
    }
}

/// A client that pings (fresh connection each time, `pause` between) until stopped or
/// `max_calls` calls, recording every outcome. Its calls each wait at most ANSWER_TIMEOUT.
pub struct Bystander {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<JoinHandle<()>>,
}

impl Bystander {
    pub fn start(
        ping: fn(SocketAddr) -> Result<(), String>,
        addr: SocketAddr,
        pause: Duration,
        max_calls: usize,
    ) -> Bystander {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (st, se) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            for _ in 0..max_calls {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let t = Instant::now();
                let r = ping(addr);
                let mut s = se.lock().unwrap();
                match r {
                    Ok(()) => {
                        s.ok += 1;
                        s.latencies.push(t.elapsed());
                    }
                    Err(e) => s.failed.push(format!("after {:?}: {e}", t.elapsed())),
                }
                drop(s);
                std::thread::sleep(pause);
            }
        });
        Bystander {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// Let it run for up to `within` (or until its `max_calls` are done), then stop it.
    pub fn finish_after(self, within: Duration) -> Seen {
        let end = Instant::now() + within;
        while Instant::now() < end && !self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.finish()
    }

    /// Stop and return what was seen (the thread ends within one call's timeout).
    pub fn finish(mut self) -> Seen {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.seen()
    }
}

/// Fail unless the bystander made at least `min_calls` calls and all were answered.
pub fn assert_all_answered(seen: &Seen, min_calls: usize, what: &str) {
    eprintln!(
        "{what}: bystander answered {} of {} (max latency {:?})",
        seen.ok,
        seen.ok + seen.failed.len(),
        seen.max()
    );
    assert!(
        seen.failed.is_empty(),
        "{what}: {} of {} bystander calls failed; first: {:?}",
        seen.failed.len(),
        seen.ok + seen.failed.len(),
        seen.failed.iter().take(3).collect::<Vec<_>>()
    );
    assert!(
        seen.ok >= min_calls,
        "{what}: only {} bystander calls were made (wanted {min_calls})",
        seen.ok
    );
}

/// Join a worker thread, failing the test with its panic message if it panicked.
pub fn join<T>(h: JoinHandle<T>, what: &str) -> T {
    match h.join() {
        Ok(t) => t,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what} thread panicked: {msg}")
        }
    }
}

// ---------------------------------------------------------------------------------------
// MessagePack-RPC

/// A raw msgpack-rpc connection: requests encoded by `rpcmux_msgpack_rpc`, replies decoded
/// by its codec, every read bounded.
pub struct Msgpack {
    pub s: TcpStream,
    codec: rpcmux_msgpack_rpc::MsgpackRpcCodec,
    buf: BytesMut,
}

impl Msgpack {
    pub fn connect(addr: SocketAddr) -> Result<Msgpack, String> {
        let s = dial(addr, ANSWER_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
        let limits = rpcmux_msgpack_rpc::Limits {
            max_message: 64 * MIB,
            ..Default::default()
        };
        Ok(Msgpack {
            s,
            codec: rpcmux_msgpack_rpc::MsgpackRpcCodec::new(limits),
            buf: BytesMut::new(),
        })
    }

    pub fn call(
        &mut self,
        msgid: u32,
        method: &str,
        params: &[rpcmux_value::Value],
    ) -> Result<(), String> {
        let mut out = BytesMut::new();
        rpcmux_msgpack_rpc::encode_request(&mut out, msgid, method, params)
            .map_err(|e| e.to_string())?;
        self.s
            .write_all(&out)
            .map_err(|e| format!("msgpack send: {}", describe(&e)))
    }

    /// The next message from the server.
    pub fn message(&mut self) -> Result<rpcmux_msgpack_rpc::Message, String> {
        let mut chunk = vec![0u8; 256 * KIB];
        loop {
            match self.codec.decode(&mut self.buf) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => return Err(format!("bad msgpack-rpc from the server: {e}")),
            }
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("server closed the msgpack-rpc connection".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("no msgpack-rpc reply: {}", describe(&e))),
            }
        }
    }

    /// The next response: (msgid, error, result).
    pub fn reply(&mut self) -> Result<(u32, rpcmux_value::Value, rpcmux_value::Value), String> {
        loop {
            match self.message()? {
                rpcmux_msgpack_rpc::Message::Response {
                    msgid,
                    error,
                    result,
                } => return Ok((msgid, error, result)),
                rpcmux_msgpack_rpc::Message::Notification { .. } => continue,
                other => return Err(format!("unexpected message {other:?}")),
            }
        }
    }
}

/// The error code of a msgpack-rpc error value (`[code, message]` or `[code, message, data]`).
pub fn msgpack_error_code(error: &rpcmux_value::Value) -> Option<i64> {
    match error {
        rpcmux_value::Value::Array(a) => match a.first()? {
            rpcmux_value::Value::Int(c) => Some(*c),
            _ => None,
        },
        _ => None,
    }
}
