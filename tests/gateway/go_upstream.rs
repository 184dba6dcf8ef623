//! The gateway in front of a Go `net/rpc/jsonrpc` service (tests/go/jsonrpc_server:
//! JSON-RPC 1.0 over raw TCP, `jsonrpc.ServeConn`), reached over `jsonrpc+tcp://`: Go
//! has no introspection and answers the probe with a text error, which reads as "no
//! introspection" (the `methods` list is served, no warning of a broken upstream); its
//! text errors (`"error":"divide by zero"`) are the upstream's faults, forwarded with
//! their text (code -32014), never "unreachable"; and the connection outlives them.

use crate::common::{go_build, run_rpcmux};
use crate::support::{client, gateway_with_config};
use rpcmux::client::ClientProto;
use rpcmux::{vstruct, Params, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The Go service, killed on drop.
struct GoServer(Child, u16);

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_go() -> GoServer {
    let mut child = Command::new(go_build("jsonrpc_server"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("start tests/go/jsonrpc_server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("jsonrpc_server said {line:?}"))
        .parse()
        .unwrap();
    GoServer(child, port)
}

fn args(a: i64, b: i64) -> Params {
    Params::Positional(vec![vstruct! { "A" => a, "B" => b }])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_jsonrpc_service_over_every_protocol() {
    let go = start_go();
    let toml = format!(
        "[[upstream]]\nurl = \"jsonrpc+tcp://127.0.0.1:{}\"\nprefix = \"go\"\nmethods = [\"Arith.Multiply\", \"Arith.Divide\"]\n",
        go.1
    );
    let srv = gateway_with_config(&toml);
    assert!(srv.wait_log(
        "source=\"the methods setting\"",
        std::time::Duration::from_secs(5)
    ));
    // Go's "can't find service" string is "no introspection", not a broken upstream.
    assert!(
        !srv.log().contains("cannot ask the upstream"),
        "{}",
        srv.log()
    );
    for proto in ClientProto::ALL {
        let c = client(proto, srv.addr).await;
        let r = c.call("go.Arith.Multiply", args(6, 7)).await.unwrap();
        assert_eq!(r, Ok(Value::Int(42)), "{proto}");
        let e = c
            .call("go.Arith.Divide", args(1, 0))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (rpcmux::codes::ERR_UPSTREAM_TEXT_FAULT, "divide by zero"),
            "{proto}"
        );
        // The upstream connection outlived the error.
        let r = c.call("go.Arith.Divide", args(7, 2)).await.unwrap();
        assert_eq!(r, Ok(vstruct! { "Quo" => 3, "Rem" => 1 }), "{proto}");
    }
    // Pipelined through one client connection, errors among them.
    let c = client(ClientProto::Msgpack, srv.addr).await;
    let calls = (0..64).map(|i| {
        let c = &c;
        async move { c.call("go.Arith.Divide", args(i, i % 4)).await.unwrap() }
    });
    for (i, r) in futures_util::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        let i = i as i64;
        match r {
            Ok(v) => assert_eq!(v, vstruct! { "Quo" => i / (i % 4), "Rem" => i % (i % 4) }),
            Err(e) => assert_eq!((i % 4, e.message.as_str()), (0, "divide by zero")),
        }
    }
}

/// Without a `methods` list, startup says the upstream has no introspection and what
/// to do, not that it is broken.
#[test]
fn go_service_without_a_methods_list() {
    let go = start_go();
    let url = format!("go=jsonrpc+tcp://127.0.0.1:{}", go.1);
    let out = run_rpcmux(
        &[
            "serve",
            "--no-demo",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &url,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("neither system.listMethods nor rpc.discover"),
        "{err}"
    );
    assert!(err.contains("methods"), "{err}");
}
