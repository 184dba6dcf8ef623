//! Shutdown with calls still running past `--shutdown-timeout`: every caller gets an
//! error reply (-32001, "server shutting down") in its own protocol before the
//! connection closes, never a bare EOF. One `sleep(10000)` in flight on each of
//! JSON-RPC/HTTP, XML-RPC, raw-TCP JSON-RPC, msgpack-rpc and STOMP; then SIGTERM.

use crate::common::hostile::*;
use crate::common::*;
use rpcmux_stomp::{Command, Frame};
use rpcmux_value::Value;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SHUTTING_DOWN: i64 = -32001;

type Outcome = Result<String, String>;
/// One caller: sends its `sleep`, signals `ready`, waits for the -32001 reply.
type Caller = fn(SocketAddr, mpsc::Sender<()>) -> Outcome;

fn json_http(addr: SocketAddr, ready: mpsc::Sender<()>) -> Outcome {
    let mut s = dial(addr, Duration::from_secs(15)).map_err(|e| e.to_string())?;
    use std::io::Write;
    s.write_all(&post_bytes(&[JSON], &jsonrpc("sleep", "[10000]", "1")))
        .map_err(|e| e.to_string())?;
    let _ = ready.send(());
    let r = read_response(&mut s, 64 * KIB)?;
    let v = r.json()?;
    match error_code(&v) {
        Some(SHUTTING_DOWN) => Ok(format!("JSON-RPC/HTTP: {v}")),
        _ => Err(format!("JSON-RPC/HTTP got {} {v}", r.status)),
    }
}

fn xml_http(addr: SocketAddr, ready: mpsc::Sender<()>) -> Outcome {
    let mut s = dial(addr, Duration::from_secs(15)).map_err(|e| e.to_string())?;
    use std::io::Write;
    let body = xmlrpc_call("sleep", "<param><value><int>10000</int></value></param>");
    s.write_all(&post_bytes(&[XML], &body))
        .map_err(|e| e.to_string())?;
    let _ = ready.send(());
    let r = read_response(&mut s, 64 * KIB)?;
    let text = r.text();
    match fault_code(&text) {
        Some(SHUTTING_DOWN) => Ok("XML-RPC: fault -32001".into()),
        _ => Err(format!("XML-RPC got {} {text}", r.status)),
    }
}

fn json_tcp(addr: SocketAddr, ready: mpsc::Sender<()>) -> Outcome {
    let mut c = Lines::connect_within(addr, Duration::from_secs(15))?;
    c.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":[10000],\"id\":3}\n")?;
    // A ping answered after the sleep was sent proves the sleep was read (it is running).
    c.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":30}\n")?;
    let pong = c.json(64 * KIB).map_err(|e| format!("raw TCP ping: {e}"))?;
    if pong["id"] != 30 {
        return Err(format!("raw TCP: wanted the ping's reply, got {pong}"));
    }
    let _ = ready.send(());
    let v = c.json(64 * KIB).map_err(|e| format!("raw TCP: {e}"))?;
    match (error_code(&v), v["id"].as_i64()) {
        (Some(SHUTTING_DOWN), Some(3)) => Ok(format!("raw TCP: {v}")),
        _ => Err(format!("raw TCP got {v}")),
    }
}

fn msgpack(addr: SocketAddr, ready: mpsc::Sender<()>) -> Outcome {
    let mut m = Msgpack::connect(addr)?;
    m.s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    m.call(4, "sleep", &[Value::Int(10000)])?;
    m.call(40, "ping", &[])?;
    let (pong, _, _) = m.reply().map_err(|e| format!("msgpack-rpc ping: {e}"))?;
    if pong != 40 {
        return Err(format!(
            "msgpack-rpc: wanted the ping's reply, got msgid {pong}"
        ));
    }
    let _ = ready.send(());
    let (id, err, _) = m.reply().map_err(|e| format!("msgpack-rpc: {e}"))?;
    match (id, msgpack_error_code(&err)) {
        (4, Some(SHUTTING_DOWN)) => Ok(format!("msgpack-rpc: {err:?}")),
        _ => Err(format!("msgpack-rpc got msgid {id} error {err:?}")),
    }
}

fn stomp(addr: SocketAddr, ready: mpsc::Sender<()>) -> Outcome {
    let mut s = Stomp::open(addr)?;
    s.s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.send(
        &Frame::new(Command::Subscribe)
            .header("id", "r")
            .header("destination", RESPONSES)
            .header("receipt", "sub"),
    )?;
    let f = s.frame()?;
    if f.command != Command::Receipt {
        return Err(format!("STOMP: wanted RECEIPT, got {f:?}"));
    }
    s.call(jsonrpc("sleep", "[10000]", "\"5\""), None)?;
    s.call(jsonrpc("ping", "[]", "\"50\""), None)?;
    let pong = frame_json(&s.frame().map_err(|e| format!("STOMP ping: {e}"))?)?;
    if pong["id"] != "50" {
        return Err(format!("STOMP: wanted the ping's reply, got {pong}"));
    }
    let _ = ready.send(());
    let f = s.frame().map_err(|e| format!("STOMP: {e}"))?;
    if f.command != Command::Message {
        return Err(format!("STOMP: wanted MESSAGE, got {f:?}"));
    }
    let v = frame_json(&f)?;
    match error_code(&v) {
        Some(SHUTTING_DOWN) => Ok(format!("STOMP: {v}")),
        _ => Err(format!("STOMP got {v}")),
    }
}

#[test]
fn calls_cut_by_the_shutdown_deadline_get_an_error_in_each_protocol() {
    let mut srv = Server::start_limited(&["--shutdown-timeout", "1"]);
    let (tx, rx) = mpsc::channel();
    let callers: [(&str, Caller); 5] = [
        ("JSON-RPC/HTTP", json_http),
        ("XML-RPC", xml_http),
        ("raw-TCP JSON-RPC", json_tcp),
        ("msgpack-rpc", msgpack),
        ("STOMP", stomp),
    ];
    let handles: Vec<_> = callers
        .iter()
        .map(|(name, f)| {
            let (addr, tx, f) = (srv.addr, tx.clone(), *f);
            (*name, std::thread::spawn(move || f(addr, tx)))
        })
        .collect();
    for _ in 0..callers.len() {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("every caller sent its sleep");
    }
    // The stream callers' sleeps are running (a later ping was answered); the HTTP ones
    // are written: give the server a moment to read them.
    std::thread::sleep(Duration::from_secs(1));
    let t = Instant::now();
    srv.sigterm();
    let mut failures = Vec::new();
    for (name, h) in handles {
        match join(h, name) {
            Ok(what) => eprintln!("{what}"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!("all callers done {:?} after SIGTERM", t.elapsed());
    let status = srv.wait_exit(Duration::from_secs(15));
    assert!(
        failures.is_empty(),
        "callers without a -32001 reply:\n{}\nlog tail:\n{}",
        failures.join("\n"),
        srv.log_tail(15)
    );
    assert!(status.success(), "exit status {status}");
}
