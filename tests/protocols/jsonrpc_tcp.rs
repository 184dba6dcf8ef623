//! JSON-RPC 2.0 over raw TCP: pipelining, out-of-order replies, resynchronisation, caps.

use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};

#[test]
fn real_client_messages_pipelined_out_of_order() {
    let srv = Server::start(&[]);
    let out = run_py("jsonrpc_tcp_client.py", &["127.0.0.1", &srv.port()]);
    assert!(out.contains("ok pipelined"), "{out}");
}

#[test]
fn bad_json_gets_an_error_line_and_the_stream_goes_on() {
    let srv = Server::start(&[]);
    let s = connect(srv.addr);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    // a broken value (closed brackets, invalid inside): -32700, then the next request works
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1,}\n")
        .unwrap();
    r.read_line(&mut line).unwrap();
    assert_eq!(json(line.as_bytes())["error"]["code"], -32700, "{line}");
    // a line that is not JSON at all: -32700, skipped through its newline
    line.clear();
    w.write_all(b"hello there\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":2}")
        .unwrap();
    r.read_line(&mut line).unwrap();
    assert_eq!(json(line.as_bytes())["error"]["code"], -32700, "{line}");
    line.clear();
    r.read_line(&mut line).unwrap();
    assert_eq!(json(line.as_bytes())["result"], true, "{line}");
    // a batch is one line holding an array
    line.clear();
    w.write_all(b"[{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":3},{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":4}]").unwrap();
    r.read_line(&mut line).unwrap();
    let v = json(line.as_bytes());
    assert_eq!(
        (v[0]["id"].clone(), v[1]["error"]["code"].clone()),
        (3.into(), (-32601).into())
    );
}

/// A line missing its closing brace (hand-typed into `nc`) is answered -32700 naming
/// it when the stream ends: at the client's EOF, or when the idle timeout closes.
#[test]
fn an_unterminated_value_is_answered_when_the_stream_ends() {
    let srv = Server::start(&["--idle-timeout", "1"]);
    // EOF: the complete line is answered, then the unfinished one is named.
    let mut s = connect(srv.addr);
    s.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"x\"],\"id\":2\n")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(json(lines[0].as_bytes())["result"], true, "{out}");
    let v = json(lines[1].as_bytes());
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        ((-32700).into(), serde_json::Value::Null),
        "{v}"
    );
    assert_eq!(
        v["error"]["message"],
        r#"Parse error: the stream ended inside the JSON value {"jsonrpc":"2.0","method":"echo","params…: 1 bracket never closed (a missing } or ])"#
    );
    // The idle timeout (1 s here) ends a partial message the same way, a string open.
    let mut s = connect(srv.addr);
    s.write_all(br#"{"jsonrpc":"2.0","method":"echo","params":["no end"#)
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let v = json(out.trim_end().as_bytes());
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("a string never closed (a missing \")"),
        "{v}"
    );
    // Whitespace left at the end is nothing to answer.
    let mut s = connect(srv.addr);
    s.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":3}\n\n  ")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn oversized_frame_gets_an_error_then_close() {
    let srv = Server::start(&["--max-frame", "4096"]);
    let mut s = connect(srv.addr);
    let mut big = b"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"".to_vec();
    big.extend(std::iter::repeat_n(b'x', 10_000));
    big.extend_from_slice(b"\"],\"id\":1}\n");
    let _ = s.write_all(&big);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let v = json(out.split(|b| *b == b'\n').next().unwrap());
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("4096"));
}

#[test]
fn events_reach_a_subscribed_tcp_connection() {
    let srv = Server::start(&[]);
    let s = connect(srv.addr);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    w.write_all(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"subscribe\",\"params\":[\"|virt|\"],\"id\":1}\n",
    )
    .unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(json(line.as_bytes())["result"].is_i64(), "{line}");
    // another client creates a VM over HTTP; the subscriber gets the event
    let (_, _, b) = http_post(
        srv.addr,
        None,
        br#"{"jsonrpc":"2.0","method":"VM.create","params":["ev1","n",1],"id":1}"#,
    );
    assert_eq!(json(&b)["result"]["vmId"], "ev1");
    line.clear();
    r.read_line(&mut line).unwrap();
    let ev = json(line.as_bytes());
    assert_eq!(ev["method"], "|virt|VM_status|ev1", "{line}");
    assert_eq!(ev["params"]["ev1"]["status"], "Up");
    assert!(ev["params"]["notify_time"].is_i64());
    assert!(ev.get("id").is_none(), "an event is a notification");
}

#[test]
fn idle_connections_close_but_event_subscribers_stay() {
    let srv = Server::start(&["--idle-timeout", "1"]);
    let mut idle = connect(srv.addr);
    idle.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n")
        .unwrap();
    let sub = connect(srv.addr);
    let mut w = sub.try_clone().unwrap();
    let mut r = BufReader::new(sub);
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"subscribe\",\"params\":[\"*\"],\"id\":1}\n")
        .unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    // the plain client is closed after its idle second
    let mut all = Vec::new();
    idle.read_to_end(&mut all).unwrap();
    assert!(String::from_utf8_lossy(&all).contains("\"result\":true"));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // the subscriber is still there and still gets events
    let (_, _, b) = http_post(
        srv.addr,
        None,
        br#"{"jsonrpc":"2.0","method":"VM.create","params":["idle1","n",1],"id":1}"#,
    );
    assert_eq!(json(&b)["result"]["vmId"], "idle1");
    line.clear();
    r.read_line(&mut line).unwrap();
    assert_eq!(
        json(line.as_bytes())["method"],
        "|virt|VM_status|idle1",
        "{line}"
    );
}
