//! XML-RPC over HTTP: Python's xmlrpc.client, raw HTTP forms, and hostile bodies.

use crate::common::*;
use std::io::{Read, Write};
use std::time::Duration;

const ECHO: &[u8] = include_bytes!("../../benches/data/xmlrpc_echo_req.xml");

fn fault_code(body: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(body);
    assert!(text.contains("<fault>"), "not a fault: {text}");
    let after = &text[text.find("faultCode").expect("faultCode")..];
    let start = after.find("<int>").expect("int") + 5;
    let end = after[start..].find('<').unwrap() + start;
    after[start..end].parse().unwrap()
}

#[test]
fn python_xmlrpc_client_every_type_faults_multicall_introspection() {
    let srv = Server::start(&[]);
    let out = run_py("xmlrpc_client.py", &[&format!("{}RPC2", srv.url())]);
    let n: usize = out
        .trim()
        .strip_prefix("ok ")
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(n, 27, "{out}");
}

#[test]
fn raw_http_forms_chunked_gzip_http10_keepalive() {
    let srv = Server::start(&[]);
    // chunked request body, no Content-Length
    let mut req = b"POST /RPC2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for chunk in ECHO.chunks(700) {
        req.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        req.extend_from_slice(chunk);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let (st, head, body) = parse_http(&exchange(srv.addr, &req));
    assert_eq!(st, 200);
    assert!(head.to_ascii_lowercase().contains("content-type: text/xml"));
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.contains("<methodResponse>") && body.contains("Fox Run House Concerts"),
        "{body}"
    );

    // gzip request body, gzip reply when accepted and large enough
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(ECHO).unwrap();
    let gz = gz.finish().unwrap();
    let mut req = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Encoding: gzip\r\nAccept-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", gz.len()).into_bytes();
    req.extend_from_slice(&gz);
    let (st, head, body) = parse_http(&exchange(srv.addr, &req));
    assert_eq!(st, 200);
    assert!(
        head.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{head}"
    );
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut plain)
        .unwrap();
    assert!(plain.contains("Fox Run House Concerts"));
    // a small reply is not compressed
    let ping = b"<?xml version='1.0'?><methodCall><methodName>ping</methodName><params></params></methodCall>";
    let mut req = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nAccept-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", ping.len()).into_bytes();
    req.extend_from_slice(ping);
    let (_, head, body) = parse_http(&exchange(srv.addr, &req));
    assert!(!head.to_ascii_lowercase().contains("content-encoding"));
    assert!(String::from_utf8_lossy(&body).contains("<boolean>1</boolean>"));

    // HTTP/1.0: answered and closed; HTTP/1.1 keep-alive: several on one socket
    let mut req = format!(
        "POST /RPC2 HTTP/1.0\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\r\n",
        ping.len()
    )
    .into_bytes();
    req.extend_from_slice(ping);
    let mut s = connect(srv.addr);
    s.write_all(&req).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(
        out.starts_with(b"HTTP/1.0 200") || out.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    let mut s = connect(srv.addr);
    for _ in 0..3 {
        let mut req = format!("POST /RPC2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\r\n", ping.len()).into_bytes();
        req.extend_from_slice(ping);
        s.write_all(&req).unwrap();
        let mut buf = [0u8; 2048];
        let n = s.read(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        assert!(String::from_utf8_lossy(&buf[..n]).contains("<boolean>1</boolean>"));
    }
}

#[test]
fn hostile_bodies_get_faults_or_4xx_while_others_are_served() {
    let srv = Server::start(&[]);
    let addr = srv.addr;
    // a well-behaved client keeps calling throughout
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let bystander = std::thread::spawn(move || {
        let mut ok = 0;
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            let (st, _, body) = http_post(addr, Some("text/xml"), ECHO);
            assert_eq!(st, 200);
            assert!(String::from_utf8_lossy(&body).contains("Sudbury"));
            ok += 1;
        }
        ok
    });

    let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><methodCall><methodName>echo</methodName><params><param><value>&lol3;</value></param></params></methodCall>"#;
    let external = br#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><methodCall><methodName>echo</methodName><params><param><value>&xxe;</value></param></params></methodCall>"#;
    let mut deep =
        b"<?xml version='1.0'?><methodCall><methodName>echo</methodName><params><param>".to_vec();
    deep.extend(std::iter::repeat_n(&b"<value><array><data>"[..], 100_000).flatten());
    let truncated = &ECHO[..ECHO.len() / 2];
    let mut bad_utf8 = ECHO.to_vec();
    let at = bad_utf8.windows(7).position(|w| w == b"Sudbury").unwrap();
    bad_utf8[at] = 0xff;
    for (name, body) in [
        ("billion laughs", &laughs[..]),
        ("external entity", &external[..]),
        ("100k-deep nesting", &deep[..]),
        ("truncated", truncated),
        ("invalid UTF-8", &bad_utf8[..]),
        ("not XML", &b"hello"[..]),
        ("empty", &b""[..]),
    ] {
        let (st, _, reply) = http_post(addr, Some("text/xml"), body);
        assert_eq!(st, 200, "{name}");
        let code = fault_code(&reply);
        assert!(code == -32700 || code == -32600, "{name}: fault {code}");
        assert!(
            !String::from_utf8_lossy(&reply).contains("root:"),
            "{name} leaked a file"
        );
    }

    // 100 MB body: refused with 413 and a fault body, without reading it all
    let mut s = connect(addr);
    let head = format!(
        "POST /RPC2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: {}\r\n\r\n",
        100 << 20
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(&vec![b'<'; 1 << 20]);
    let mut out = vec![0u8; 4096];
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let n = s.read(&mut out).unwrap();
    let (st, _, body) = parse_http(&out[..n]);
    assert_eq!(st, 413);
    assert_eq!(fault_code(&body), -32600);
    // the same with a chunked body that never says its size
    let mut s = connect(addr);
    s.write_all(b"POST /RPC2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
    let chunk = [&b"100000\r\n"[..], &vec![b'a'; 0x100000], b"\r\n"].concat();
    let mut got_413 = false;
    for _ in 0..40 {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    let mut out = vec![0u8; 4096];
    if let Ok(n) = s.read(&mut out) {
        got_413 = out[..n].starts_with(b"HTTP/1.1 413");
    }
    assert!(
        got_413,
        "chunked oversize: {:?}",
        String::from_utf8_lossy(&out[..64])
    );

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let served = bystander.join().expect("bystander saw only good replies");
    assert!(served > 0);
}
