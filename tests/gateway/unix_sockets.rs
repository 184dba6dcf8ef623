//! Upstreams on Unix-domain sockets (docs/gateway.md, "On a Unix-domain socket"):
//! JSON-RPC lines on a socket file and on an abstract socket (`jsonrpc+unix://`), and
//! XML-RPC over HTTP on a socket file (`xmlrpc+http+unix://...?path=`), each a stdlib
//! Python server (tests/gateway/unix_upstream.py), and an rpcmux upstream on its own
//! socket file over `msgpack+unix` and the rest. supervisord on its socket is in
//! supervisord.rs.

use crate::common::Server;
use crate::support::{client, temp_dir, SockUpstream};
use rpcmux::client::ClientProto;
use rpcmux::{Params, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_and_http_upstreams_on_socket_files_and_an_abstract_socket() {
    let dir = temp_dir("unix");
    let lines = dir.join("lines.sock").display().to_string();
    let http = dir.join("http.sock").display().to_string();
    let name = format!("@rpcmux-gw-{}", std::process::id());
    let _up = [
        SockUpstream::start("lines", &lines, "file"),
        SockUpstream::start("lines", &name, "abstract"),
        SockUpstream::start("http", &http, "http"),
    ];
    let srv = Server::start(&[
        "--no-demo",
        "--upstream",
        &format!("f=jsonrpc+unix://{lines}"),
        "--upstream",
        &format!("a=jsonrpc+unix://{name}"),
        "--upstream",
        &format!("h=xmlrpc+http+unix://{http}?path=/RPC2"),
    ]);
    let two = || Params::Positional(vec![Value::Int(2), Value::Int(3)]);
    let none = || Params::Positional(vec![]);
    for proto in [ClientProto::Jsonrpc, ClientProto::Msgpack] {
        let c = client(proto, srv.addr).await;
        for (prefix, tag) in [("f", "file"), ("a", "abstract"), ("h", "http")] {
            let sum = c.call(&format!("{prefix}.add"), two()).await.unwrap();
            assert_eq!(sum, Ok(Value::Int(5)), "{proto} {prefix}");
            let got = c.call(&format!("{prefix}.tag"), none()).await.unwrap();
            assert_eq!(got, Ok(Value::from(tag)), "{proto} {prefix}");
        }
        // Over a socket the Host header is `localhost`; X-Forwarded-For is the caller's.
        let headers = c.call("h.headers", none()).await.unwrap();
        let want = Value::Array(vec!["localhost".into(), "127.0.0.1".into()]);
        assert_eq!(headers, Ok(want), "{proto}");
    }
    // Named parameters reach a JSON-RPC upstream by name.
    let c = client(ClientProto::Jsonrpc, srv.addr).await;
    let mut named = rpcmux::Map::new();
    named.insert("a", Value::Int(1));
    named.insert("b", Value::Int(2));
    let sum = c.call("a.add", Params::Named(named)).await.unwrap();
    assert_eq!(sum, Ok(Value::Int(3)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A socket nobody listens on stops the start, naming the upstream and the socket.
#[test]
fn a_missing_socket_is_a_startup_error_naming_it() {
    let sock = temp_dir("unix-missing").join("none.sock");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-demo",
            "--upstream",
        ])
        .arg(format!("sv=xmlrpc+unix://{}", sock.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rpcmux: upstream sv is down: "), "{err}");
    assert!(err.contains(&format!("unix:{}", sock.display())), "{err}");
}

/// An rpcmux upstream on its own socket file, reached by every socket scheme:
/// msgpack-rpc (`msgpack+unix`), JSON-RPC lines, JSON-RPC over HTTP; typed values keep
/// their types end to end, and the upstream sees the gateway as a local process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rpcmux_upstream_on_a_socket_file_over_every_scheme() {
    let dir = temp_dir("unix-rpcmux");
    let sock = dir.join("up.sock").display().to_string();
    let _up = Server::start(&["--listen", &format!("unix:{sock}"), "--unix-mode", "0600"]);
    let srv = Server::start(&[
        "--no-demo",
        "--upstream",
        &format!("m=msgpack+unix://{sock}"),
        "--upstream",
        &format!("t=jsonrpc+unix://{sock}"),
        "--upstream",
        &format!("h=jsonrpc+http+unix://{sock}"),
    ]);
    let when = rpcmux::DateTime::from_ymd_hms(1999, 12, 31, 23, 59, 59).unwrap();
    let typed = rpcmux::vstruct! {
        "when" => Value::DateTime(when),
        "bytes" => Value::Bytes(vec![0, 159, 146, 150]),
        "big" => i64::MAX,
    };
    let c = client(ClientProto::Msgpack, srv.addr).await;
    let r = c
        .call("m.echo", Params::Positional(vec![typed.clone()]))
        .await
        .unwrap();
    assert_eq!(r, Ok(typed), "msgpack+unix keeps timestamp, bin and i64");
    for prefix in ["m", "t", "h"] {
        let who = c
            .call(&format!("{prefix}.whoami"), Params::Positional(vec![]))
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{prefix}: {e:?}"));
        let peer = who.get("peer").and_then(Value::as_str).unwrap_or_default();
        assert!(peer.starts_with("unix(uid="), "{prefix}: {who:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
