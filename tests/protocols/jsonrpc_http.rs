//! JSON-RPC 2.0 over HTTP/1.1: raw requests (as curl sends them) and the real Python clients.

use crate::common::*;
use serde_json::json;
use std::io::{Read, Write};

#[test]
fn real_python_clients_jsonrpclib_and_tinyrpc() {
    let srv = Server::start(&[]);
    let out = run_py("jsonrpc_http_clients.py", &[&srv.url()]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        12,
        "{out}"
    );
}

/// JSON-RPC 1.0 (no "jsonrpc" member): python-bitcoinrpc's AuthServiceProxy (its
/// `batch_` too) and jsonrpclib-pelix with version=1.0 over HTTP, and 1.0 requests over
/// raw TCP and WebSocket, each answered in 1.0's shape (result and error both present,
/// one null).
#[test]
fn json_rpc_1_clients_bitcoinrpc_and_jsonrpclib() {
    let srv = Server::start(&[]);
    let out = run_py("jsonrpc_v1_clients.py", &["127.0.0.1", &srv.port()]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        19,
        "{out}"
    );
}

#[test]
fn single_batch_and_notifications() {
    let srv = Server::start(&[]);
    let (st, head, body) = http_post(
        srv.addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","method":"echo","params":[{"k":[1,2.5,null,"s"]}],"id":"a"}"#,
    );
    assert_eq!(st, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    assert_eq!(
        json(&body),
        json!({"jsonrpc":"2.0","result":{"k":[1,2.5,null,"s"]},"id":"a"})
    );

    // A batch is answered as an array in request order, even with one member.
    let (_, _, body) = http_post(
        srv.addr,
        None,
        br#"[{"jsonrpc":"2.0","method":"ping","id":1}]"#,
    );
    assert_eq!(json(&body), json!([{"jsonrpc":"2.0","result":true,"id":1}]));
    let batch = br#"[{"jsonrpc":"2.0","method":"sleep","params":[1000],"id":1},
        {"jsonrpc":"2.0","method":"ping"},
        {"jsonrpc":"2.0","method":"echo","params":{"value":7},"id":null},
        {"jsonrpc":"2.0","method":"sleep","params":[1000],"id":3}]"#;
    let t = std::time::Instant::now();
    let (_, _, body) = http_post(srv.addr, Some("application/json-rpc"), batch);
    assert_eq!(
        json(&body),
        json!([{"jsonrpc":"2.0","result":1000,"id":1},{"jsonrpc":"2.0","result":7,"id":null},{"jsonrpc":"2.0","result":1000,"id":3}])
    );
    // Two 1 s sleeps in under 1.9 s: they ran concurrently (correctness, not speed).
    assert!(
        t.elapsed().as_millis() < 1900,
        "batch members run in parallel: took {:?}",
        t.elapsed()
    );

    // A notification gets an empty 200 (jsonrpclib-pelix refuses 204 for one);
    // an all-notification batch gets 204.
    let (st, _, body) = http_post(srv.addr, None, br#"{"jsonrpc":"2.0","method":"ping"}"#);
    assert_eq!((st, body.len()), (200, 0));
    let (st, _, body) = http_post(
        srv.addr,
        None,
        br#"[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"nope"}]"#,
    );
    assert_eq!((st, body.len()), (204, 0));
}

#[test]
fn every_error_code() {
    let srv = Server::start(&[]);
    let code = |body: &[u8]| -> (serde_json::Value, serde_json::Value) {
        let (st, _, b) = http_post(srv.addr, Some("application/json"), body);
        assert_eq!(st, 200);
        let v = json(&b);
        (v["error"]["code"].clone(), v["id"].clone())
    };
    assert_eq!(
        code(b"{\"jsonrpc\":\"2.0\",\"method\""),
        (json!(-32700), json!(null))
    );
    assert_eq!(code(b"[]"), (json!(-32600), json!(null)));
    assert_eq!(
        code(br#"{"jsonrpc":"3.0","method":"ping","id":9}"#),
        (json!(-32600), json!(9))
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","method":5,"id":"x"}"#),
        (json!(-32600), json!("x"))
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","method":"nope","id":1}"#),
        (json!(-32601), json!(1))
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","method":"echo","params":[],"id":2}"#),
        (json!(-32602), json!(2))
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","method":"sleep","params":{"secs":1},"id":3}"#),
        (json!(-32602), json!(3))
    );
    assert_eq!(
        code(br#"{"jsonrpc":"2.0","method":"VM.destroy","params":["none"],"id":4}"#),
        (json!(1), json!(4))
    );
    // In a batch, a bad member gets its error in place.
    let (_, _, b) = http_post(
        srv.addr,
        None,
        br#"[1,{"jsonrpc":"2.0","method":"ping","id":2}]"#,
    );
    let v = json(&b);
    assert_eq!(v[0]["error"]["code"], -32600);
    assert_eq!(v[1]["result"], true);
}

#[test]
fn http_statuses_and_health() {
    let srv = Server::start(&["--max-body", "1000"]);
    let (st, _, body) = parse_http(&exchange(
        srv.addr,
        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    assert_eq!((st, body.as_slice()), (200, &b"ok\n"[..]));
    let (st, _, body) = http_post(srv.addr, Some("application/json"), &vec![b' '; 2000]);
    assert_eq!(st, 413);
    assert_eq!(json(&body)["error"]["code"], -32600);
    // Too large without a Content-Length (chunked): still 413, not buffered.
    let mut chunked = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for _ in 0..3 {
        chunked.extend_from_slice(b"200\r\n");
        chunked.extend_from_slice(&[b' '; 0x200]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(parse_http(&exchange(srv.addr, &chunked)).0, 413);
    let (st, _, _) = http_post(srv.addr, Some("image/png"), b"{}");
    assert_eq!(st, 415);
    let (st, head, _) = parse_http(&exchange(
        srv.addr,
        b"DELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    assert_eq!(st, 405);
    assert!(head.to_ascii_lowercase().contains("allow: post, get"));
}

#[test]
fn keep_alive_and_http10() {
    let srv = Server::start(&[]);
    let mut s = connect(srv.addr);
    let body = br#"{"jsonrpc":"2.0","method":"ping","id":1}"#;
    for _ in 0..3 {
        let req = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
        s.write_all(req.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut buf = [0u8; 1024];
        let n = s.read(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(
            text.ends_with("{\"jsonrpc\":\"2.0\",\"result\":true,\"id\":1}\n"),
            "{text}"
        );
    }
    // HTTP/1.0 without keep-alive: answered, then closed by the server.
    let req = format!(
        "POST / HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut raw = req.into_bytes();
    raw.extend_from_slice(body);
    let mut s = connect(srv.addr);
    s.write_all(&raw).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let (st, _, b) = parse_http(&out);
    assert_eq!((st, json(&b)["result"].clone()), (200, json!(true)));
}

/// Reads one HTTP response with a Content-Length body from `s`.
fn read_response(s: &mut std::net::TcpStream) -> (u16, String, Vec<u8>) {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).unwrap(),
            1,
            "closed inside a response head"
        );
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    raw.extend_from_slice(&body);
    parse_http(&raw)
}

#[test]
fn keep_alive_survives_the_idle_release_of_its_buffers() {
    // An idle keep-alive connection gives its hyper buffers back after a second; the
    // next request on it, one arriving in pieces across a release, and two pipelined
    // requests must all be answered on the same socket.
    let srv = Server::start(&[]);
    let mut s = connect(srv.addr);
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let req = |id: u32| {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"echo","params":[{id}],"id":{id}}}"#);
        format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let check = |s: &mut std::net::TcpStream, id: u32| {
        let (st, head, body) = read_response(s);
        assert_eq!(st, 200);
        assert!(
            !head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
        assert_eq!(json(&body)["result"], id, "{head}");
    };
    s.write_all(req(1).as_bytes()).unwrap();
    check(&mut s, 1);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    s.write_all(req(2).as_bytes()).unwrap();
    check(&mut s, 2);
    let r3 = req(3);
    let (a, b) = r3.split_at(20);
    s.write_all(a.as_bytes()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    s.write_all(b.as_bytes()).unwrap();
    check(&mut s, 3);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    s.write_all(format!("{}{}", req(4), req(5)).as_bytes())
        .unwrap();
    check(&mut s, 4);
    check(&mut s, 5);
}
