//! A plaintext HTTP/2 client (prior knowledge) on a port that requires TLS is told to use
//! https://, as a plaintext HTTP/1.1 one is (tls_proxy.rs): the same `400` and text, as an
//! HTTP/2 answer, where it used to be closed without a word (curl: "Error in the HTTP2
//! framing layer" at best). Seen by a raw socket speaking HTTP/2 frame by frame, by curl
//! and by httpx.

use crate::common::pki::Pki;
use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// One HTTP/2 frame: its type, flags, stream and payload.
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn read_frame(s: &mut TcpStream) -> Option<Frame> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head).ok()?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    assert!(len <= 1 << 14, "a frame of {len} bytes");
    let mut payload = vec![0; len];
    s.read_exact(&mut payload).ok()?;
    Some(Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        payload,
    })
}

#[test]
fn plaintext_http2_is_told_to_use_https() {
    let pki = Pki::new();
    let mut args = pki.server_flags();
    args.extend(["--tls".into(), "required".into()]);
    let srv = Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>());

    // Raw: the preface, an empty SETTINGS, and GET / on stream 1 (HPACK: :method GET,
    // :scheme http, :path / from the static table, :authority a literal).
    let mut s = TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let authority = b"localhost:5";
    let mut block = vec![0x82, 0x86, 0x84, 0x41, authority.len() as u8];
    block.extend_from_slice(authority);
    let mut out = rpcmux_sniff::HTTP2_PREFACE.to_vec();
    out.extend(frame(0x4, 0, 0, &[]));
    out.extend(frame(0x1, 0x5, 1, &block)); // HEADERS, END_STREAM | END_HEADERS
    s.write_all(&out).unwrap();
    let (mut status, mut body, mut ended) = (None, Vec::new(), false);
    // The answer: SETTINGS first, then HEADERS (`:status 400`: HPACK static index 12,
    // 0x8c) and DATA to END_STREAM, on stream 1. At most 20 frames.
    for _ in 0..20 {
        let Some(f) = read_frame(&mut s) else { break };
        match (f.kind, f.stream) {
            (0x1, 1) => status = f.payload.first().copied(),
            (0x0, 1) => {
                body.extend_from_slice(&f.payload);
                if f.flags & 0x1 != 0 {
                    ended = true;
                    break;
                }
            }
            (0x4 | 0x8, 0) => {} // SETTINGS (and its ACK), WINDOW_UPDATE
            (kind, stream) => panic!("frame type {kind} on stream {stream}"),
        }
    }
    assert_eq!(status, Some(0x8c), "`:status 400`, indexed");
    assert!(ended, "the body ends the stream");
    assert_eq!(
        String::from_utf8_lossy(&body),
        "This port requires TLS: send the request over https:// (https://localhost:5/).\n"
    );
    assert!(
        srv.wait_log("plaintext refused: TLS is required", Duration::from_secs(5)),
        "{}",
        srv.log()
    );

    // curl shows the text and the status, over HTTP/2.
    let url = format!("http://localhost:{}/", srv.port());
    let curl = Command::new("curl")
        .args([
            "-sS",
            "--http2-prior-knowledge",
            "-w",
            "\n%{http_code} %{http_version}",
        ])
        .arg(&url)
        .output()
        .expect("curl");
    let said = String::from_utf8_lossy(&curl.stdout);
    assert!(
        curl.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&curl.stderr)
    );
    assert_eq!(
        said,
        format!(
            "This port requires TLS: send the request over https:// (https://localhost:{}/).\n\n400 2",
            srv.port()
        )
    );

    // httpx (python-hyper's h2) too: it refuses a PING after a GOAWAY, so a graceful
    // HTTP/2 shutdown after the answer made it lose the answer.
    let script = r#"
import httpx, sys
r = httpx.Client(http1=False, http2=True).post(f"http://127.0.0.1:{sys.argv[1]}/", json={})
print(r.http_version, r.status_code, r.text, end="")
"#;
    let py = Command::new(python("RPCMUX_PY_CLIENTS", "clients"))
        .args(["-c", script, &srv.port()])
        .output()
        .expect("python");
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&py.stdout),
        format!(
            "HTTP/2 400 This port requires TLS: send the request over https:// (https://127.0.0.1:{}/).\n",
            srv.port()
        )
    );
}
