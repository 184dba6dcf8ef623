//! The gateway in front of third-party servers of the other protocols:
//! msgpack-rpc-python's server (no introspection: the `methods` setting),
//! jsonrpclib-pelix's JSON-RPC server over HTTP/1.0 (introspection; every call closes
//! its connection, so each forwarded call needs a new one), and jsonrpsee's HTTP server
//! (Rust; benches/peers/jsonrpsee-echo, no introspection).

use crate::common::{jsonrpsee_echo, Server};
use crate::support::{client, free_port, gateway_with_config, PyUpstream};
use rpcmux::client::ClientProto;
use rpcmux::{vstruct, Map, Params, RpcError, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn pos(v: Vec<Value>) -> Params {
    Params::Positional(v)
}

/// What every protocol, and these servers, carry as themselves.
fn plain() -> Value {
    vstruct! {
        "int" => -7,
        "double" => 0.1,
        "bool" => false,
        "string" => "ü ✓",
        "nil" => Value::Nil,
        "array" => Value::Array(vec![1.into(), Value::Array(vec!["x".into()])]),
        "struct" => vstruct! { "k" => "v" },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn msgpack_rpc_python_server_with_a_methods_list() {
    let port = free_port();
    let py = PyUpstream::script(
        "RPCMUX_PY_MSGPACKRPC",
        "msgpackrpc",
        "msgpackrpc_upstream.py",
        &[&port.to_string()],
    );
    let toml = format!(
        "[[upstream]]\nurl = \"msgpack+tcp://127.0.0.1:{}\"\nprefix = \"mp\"\nmethods = [\"echo\", \"add\", \"fail\"]\n",
        py.port
    );
    let srv = gateway_with_config(&toml);
    assert!(srv.wait_log(
        "serving the methods setting",
        std::time::Duration::from_secs(2)
    ));
    for proto in ClientProto::ALL {
        let c = client(proto, srv.addr).await;
        let r = c.call("mp.echo", pos(vec![plain()])).await.unwrap();
        assert_eq!(r, Ok(plain()), "{proto}");
        let r = c
            .call("mp.add", pos(vec![40.into(), 2.into()]))
            .await
            .unwrap();
        assert_eq!(r, Ok(Value::Int(42)), "{proto}");
        // Its errors are bare strings: rpcmux's msgpack reader gives them -32603.
        let e = c
            .call("mp.fail", pos(vec!["disk on fire".into()]))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (-32603, "disk on fire"),
            "{proto}"
        );
    }
    // Only the listed verbs are served.
    let c = client(ClientProto::Jsonrpc, srv.addr).await;
    let e = c
        .call("mp.missing", pos(vec![]))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.code, -32601);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpclib_server_over_http_1_0() {
    let py = PyUpstream::script(
        "RPCMUX_PY_CLIENTS",
        "clients",
        "jsonrpc_upstream.py",
        &["0"],
    );
    let url = format!("js=jsonrpc+http://127.0.0.1:{}/", py.port);
    let srv = Server::start(&["--no-demo", "--upstream", &url]);
    let help = client(ClientProto::Xmlrpc, srv.addr)
        .await
        .call("system.methodHelp", pos(vec!["js.add".into()]))
        .await
        .unwrap();
    assert_eq!(help, Ok(Value::from("Add two numbers.")));
    for proto in ClientProto::ALL {
        let c = client(proto, srv.addr).await;
        // Several calls in a row: each needs a new connection (HTTP/1.0).
        for _ in 0..3 {
            let r = c.call("js.echo", pos(vec![plain()])).await.unwrap();
            assert_eq!(r, Ok(plain()), "{proto}");
        }
        let r = c
            .call("js.fail", pos(vec![7.into(), "no such disk".into()]))
            .await
            .unwrap();
        assert_eq!(r, Err(RpcError::new(7, "no such disk")), "{proto}");
    }
    // Named parameters go through to a JSON-RPC upstream.
    let mut named = Map::new();
    named.insert("b", 2.into());
    named.insert("a", 40.into());
    let c = client(ClientProto::Stomp, srv.addr).await;
    let r = c.call("js.add", Params::Named(named)).await.unwrap();
    assert_eq!(r, Ok(Value::Int(42)));
}

/// A running jsonrpsee-echo, killed on drop.
struct Jsonrpsee(Child, String);

impl Drop for Jsonrpsee {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_jsonrpsee() -> Jsonrpsee {
    let mut child = Command::new(jsonrpsee_echo())
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start jsonrpsee-echo");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("jsonrpsee-echo said {line:?}"))
        .to_owned();
    Jsonrpsee(child, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpsee_server_with_a_methods_list() {
    let rs = start_jsonrpsee();
    // It answers neither system.listMethods nor rpc.discover (-32601 for both).
    let toml = format!(
        "[[upstream]]\nurl = \"jsonrpc+http://{}/\"\nprefix = \"rs\"\nmethods = [\"echo\", \"ping\"]\nconnections = 4\n",
        rs.1
    );
    let srv = gateway_with_config(&toml);
    for proto in ClientProto::ALL {
        let c = client(proto, srv.addr).await;
        let r = c.call("rs.echo", pos(vec![plain()])).await.unwrap();
        assert_eq!(r, Ok(plain()), "{proto}");
        let r = c.call("rs.ping", pos(vec![])).await.unwrap();
        assert_eq!(r, Ok(Value::Bool(true)), "{proto}");
        // jsonrpsee's own parameter error, its data included.
        let e = c.call("rs.echo", pos(vec![])).await.unwrap().unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (-32602, "Invalid params"),
            "{proto}"
        );
        // XML-RPC faults have no place for data; the other protocols carry it.
        assert_eq!(
            e.data.is_some(),
            proto != ClientProto::Xmlrpc,
            "{proto}: {e:?}"
        );
    }
    // 64 calls at once from one pipelined connection share the 4 upstream connections.
    let c = client(ClientProto::Msgpack, srv.addr).await;
    let calls = (0..64).map(|i| {
        let c = &c;
        async move { c.call("rs.echo", pos(vec![Value::Int(i)])).await.unwrap() }
    });
    for (i, r) in futures_util::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(r, Ok(Value::Int(i as i64)));
    }
}
