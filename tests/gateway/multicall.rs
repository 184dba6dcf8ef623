//! Batches to an XML-RPC upstream that has `system.multicall` go as ONE upstream request,
//! against the real Python upstream (tests/python/xmlrpc_upstream.py counts the HTTP
//! requests it answers): a JSON-RPC batch over HTTP and over raw TCP, an XML-RPC
//! client's own multicall, and msgpack-rpc requests pipelined in one write; member
//! faults keep their codes; with `multicall = false` each member is a request of its own.

use crate::common::{connect, exchange, http_post, json, Server};
use crate::support::{client, gateway_with_config, PyUpstream};
use bytes::BytesMut;
use rpcmux::client::ClientProto;
use rpcmux::{vstruct, Params, Value};
use rpcmux_msgpack_rpc::{decode_message, encode_request, Limits, Message, MsgpackRpcCodec};
use serde_json::json;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
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

/// Five msgpack-rpc requests for py written in ONE write (msgids out of order, one
/// faulting); their replies by msgid, as `(error, result)`.
fn msgpack_pipeline(addr: SocketAddr) -> HashMap<u32, (Value, Value)> {
    let mut req = BytesMut::new();
    let calls: [(u32, &str, Vec<Value>); 5] = [
        (7, "py.add", vec![2.into(), 3.into()]),
        (3, "py.fail", vec![42.into(), "the answer".into()]),
        (9, "py.echo", vec!["x".into()]),
        (1, "py.whoami", vec![]),
        (5, "py.add", vec![40.into(), 2.into()]),
    ];
    for (id, m, p) in &calls {
        encode_request(&mut req, *id, m, p).unwrap();
    }
    let mut s = connect(addr);
    s.write_all(&req).unwrap();
    let mut codec = MsgpackRpcCodec::new(Limits::default());
    let (mut buf, mut chunk, mut replies) = (BytesMut::new(), [0u8; 4096], HashMap::new());
    while replies.len() < calls.len() {
        while let Some(len) = codec.frame_len(&mut buf).unwrap() {
            let frame = buf.split_to(len);
            match decode_message(&frame, &Limits::default()).unwrap() {
                Message::Response {
                    msgid,
                    error,
                    result,
                } => assert!(replies.insert(msgid, (error, result)).is_none()),
                other => panic!("not a response: {other:?}"),
            }
        }
        if replies.len() == calls.len() {
            break;
        }
        let n = s.read(&mut chunk).expect("replies within the read timeout");
        assert!(n > 0, "closed early: {replies:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
    replies
}

/// Send the pipeline of [`msgpack_pipeline`] to `srv`, check its replies, and return how
/// many requests the upstream saw for it.
async fn pipeline_counted(srv: &Server) -> i64 {
    let addr = srv.addr;
    let (r, n) = counted(srv, async {
        spawn_blocking(move || msgpack_pipeline(addr))
            .await
            .unwrap()
    })
    .await;
    check_pipeline(&r);
    n
}

fn check_pipeline(r: &HashMap<u32, (Value, Value)>) {
    assert_eq!(r.len(), 5, "{r:?}");
    let ok = |id: u32| {
        let (e, v) = &r[&id];
        assert_eq!(*e, Value::Nil, "msgid {id}: {r:?}");
        v.clone()
    };
    assert_eq!(ok(7), Value::Int(5));
    assert_eq!(ok(9), Value::from("x"));
    assert_eq!(ok(1), Value::from("a"));
    assert_eq!(ok(5), Value::Int(42));
    // msgpack-rpc's error shape, the upstream's fault code and text unchanged.
    let (e, v) = &r[&3];
    assert_eq!(
        *e,
        Value::Array(vec![42.into(), "the answer".into()]),
        "{r:?}"
    );
    assert_eq!(*v, Value::Nil);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_msgpack_pipeline_goes_as_one_multicall() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway(&py, true);
    let addr = srv.addr;
    let n = pipeline_counted(&srv).await;
    assert_eq!(n, 1, "five pipelined calls, one upstream request");
    // A single call is still sent as itself, not as a multicall of one.
    let c = client(ClientProto::Msgpack, addr).await;
    let one = c.call("py.add", Params::Positional(vec![1.into(), 2.into()]));
    let (r, n) = counted(&srv, async { one.await.unwrap().unwrap() }).await;
    assert_eq!((r, n), (Value::Int(3), 1));
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
    let n = pipeline_counted(&srv).await;
    assert_eq!(n, 5, "one upstream request per pipelined call");
}
