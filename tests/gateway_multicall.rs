//! Batches to an XML-RPC upstream that has `system.multicall` go as ONE upstream request,
//! against the real Python upstream (tests/python/xmlrpc_upstream.py counts the HTTP
//! requests it answers): a JSON-RPC batch over HTTP and over raw TCP, and an XML-RPC
//! client's own multicall; member faults keep their codes; with `multicall = false`
//! each member is a request of its own.

mod common;
mod gateway_support;

use common::{exchange, http_post, json, Server};
use gateway_support::{client, gateway_with_config, PyUpstream};
use rpcmux::client::ClientProto;
use rpcmux::{vstruct, Params, Value};
use serde_json::json;
use tokio::task::spawn_blocking;

fn gateway(py: &PyUpstream, multicall: bool) -> Server {
    gateway_with_config(&format!(
        "[[upstream]]\nprefix = \"py\"\nurl = \"{}\"\nmulticall = {multicall}\n",
        py.url()
    ))
}

/// HTTP requests the upstream answered so far (the one asking included).
async fn requests(srv: &Server) -> i64 {
    let c = client(ClientProto::Msgpack, srv.addr).await;
    let r = c
        .call("py.requests", Params::Positional(vec![]))
        .await
        .unwrap();
    r.unwrap().as_i64().unwrap()
}

/// Upstream requests `f` caused (the counting call itself taken off).
async fn counted<F: std::future::Future<Output = T>, T>(srv: &Server, f: F) -> (T, i64) {
    let before = requests(srv).await;
    let out = f.await;
    (out, requests(srv).await - before - 1)
}

fn batch() -> Vec<u8> {
    let b = json!([
        {"jsonrpc": "2.0", "method": "py.add", "params": [2, 3], "id": 1},
        {"jsonrpc": "2.0", "method": "py.fail", "params": [42, "the answer"], "id": 2},
        {"jsonrpc": "2.0", "method": "py.echo", "params": ["x"]},
        {"jsonrpc": "2.0", "method": "py.nope", "params": [], "id": 4},
        {"jsonrpc": "2.0", "method": "py.whoami", "id": "five"},
    ]);
    serde_json::to_vec(&b).unwrap()
}

fn check_batch(reply: &serde_json::Value) {
    let r = reply.as_array().unwrap_or_else(|| panic!("{reply}"));
    assert_eq!(r.len(), 4, "the notification is not answered: {reply}");
    let by_id = |id: serde_json::Value| r.iter().find(|m| m["id"] == id).unwrap();
    assert_eq!(by_id(json!(1))["result"], 5);
    assert_eq!(by_id(json!(2))["error"]["code"], 42, "{reply}");
    assert_eq!(by_id(json!(2))["error"]["message"], "the answer");
    assert_eq!(by_id(json!("five"))["result"], "a");
    // Not a verb rpcmux serves: answered by rpcmux, the others still one request.
    assert_eq!(by_id(json!(4))["error"]["code"], -32601);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_go_to_the_upstream_as_one_multicall() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway(&py, true);
    let addr = srv.addr;
    // JSON-RPC over HTTP: members 1-3 and 5 are two runs, around the unknown verb.
    let http = || spawn_blocking(move || http_post(addr, Some("application/json"), &batch()));
    let ((status, _, body), n) = counted(&srv, async { http().await.unwrap() }).await;
    assert_eq!(status, 200);
    check_batch(&json(&body));
    assert_eq!(n, 2, "two runs of members for py, one request each");
    // The same without the gap: one request for the whole batch, over raw TCP.
    let mut whole: serde_json::Value = serde_json::from_slice(&batch()).unwrap();
    whole.as_array_mut().unwrap().remove(3);
    let mut line = serde_json::to_vec(&whole).unwrap();
    line.push(b'\n');
    let tcp = || spawn_blocking(move || exchange(addr, &line));
    let (raw, n) = counted(&srv, async { tcp().await.unwrap() }).await;
    let reply: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(reply.as_array().unwrap().len(), 3, "{reply}");
    assert_eq!(reply[1]["error"]["code"], 42);
    assert_eq!(n, 1, "one upstream request for the batch");
    // An XML-RPC client's own multicall goes on as one.
    let call = |m: &str, p: Vec<Value>| vstruct! { "methodName" => m, "params" => Value::Array(p) };
    let calls = Value::Array(vec![
        call("py.add", vec![1.into(), 1.into()]),
        call("py.fail", vec![7.into(), "seven".into()]),
        call("py.echo", vec![Value::Nil]),
    ]);
    let c = client(ClientProto::Xmlrpc, addr).await;
    let (r, n) = counted(&srv, async {
        c.call("system.multicall", Params::Positional(vec![calls]))
            .await
            .unwrap()
            .unwrap()
    })
    .await;
    let r = r.as_array().unwrap();
    assert_eq!(r[0], Value::Array(vec![2.into()]));
    assert_eq!(r[1].get("faultCode"), Some(&Value::Int(7)));
    assert_eq!(r[1].get("faultString"), Some(&Value::from("seven")));
    assert_eq!(r[2], Value::Array(vec![Value::Nil]));
    assert_eq!(n, 1, "one upstream request for the multicall");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_multicall_off_each_member_is_a_request() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway(&py, false);
    let addr = srv.addr;
    let http = || spawn_blocking(move || http_post(addr, Some("application/json"), &batch()));
    let ((_, _, body), n) = counted(&srv, async { http().await.unwrap() }).await;
    check_batch(&json(&body));
    assert_eq!(n, 4, "one upstream request per member for py");
}
