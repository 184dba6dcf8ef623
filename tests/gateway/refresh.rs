//! The gateway learning its upstream again while serving, against the real Python
//! upstream (tests/python/xmlrpc_upstream.py, whose `learn`/`forget` verbs change its
//! own verb list): on SIGHUP, on the `refresh` timer, a failed refresh keeping the
//! verbs; and active health checks (`health_interval`) marking an address down and up.

use crate::common::{exchange, parse_http, Server};
use crate::support::{client, free_port, gateway_with_config, PyUpstream};
use rpcmux::client::ClientProto;
use rpcmux::{Params, RpcError, Value};
use std::time::{Duration, Instant};

async fn call(
    srv: &Server,
    proto: ClientProto,
    method: &str,
    p: Vec<Value>,
) -> Result<Value, RpcError> {
    client(proto, srv.addr)
        .await
        .call(method, Params::Positional(p))
        .await
        .unwrap_or_else(|e| panic!("{proto} {method}: no reply: {e}"))
}

async fn listed(srv: &Server) -> Vec<String> {
    let list = call(srv, ClientProto::Xmlrpc, "system.listMethods", vec![])
        .await
        .unwrap();
    let names = list.as_array().unwrap().iter();
    names
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The value of the sample `name{labels}` in `GET /metrics` (classic text), if there.
fn metric(srv: &Server, sample: &str) -> Option<f64> {
    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (status, _, body) = parse_http(&exchange(srv.addr, req.as_bytes()));
    assert_eq!(status, 200);
    let text = String::from_utf8(body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(sample)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_learns_added_and_removed_verbs_and_a_failed_refresh_keeps_them() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway_with_config(&format!(
        "[[upstream]]\nprefix = \"py\"\nurl = \"{}\"\n",
        py.url()
    ));
    // The upstream changes: one verb more, one less. rpcmux does not know yet.
    let learn = call(&srv, ClientProto::Jsonrpc, "py.learn", vec!["fresh".into()]).await;
    assert_eq!(learn, Ok(Value::Bool(true)));
    let forget = call(
        &srv,
        ClientProto::Jsonrpc,
        "py.forget",
        vec!["whoami".into()],
    )
    .await;
    assert_eq!(forget, Ok(Value::Bool(true)));
    let e = call(&srv, ClientProto::Msgpack, "py.fresh", vec![])
        .await
        .unwrap_err();
    assert_eq!(e.code, -32601, "not learned before the SIGHUP");
    // A call in flight across the refresh keeps its verb and finishes.
    let slow = {
        let addr = srv.addr;
        tokio::spawn(async move {
            client(ClientProto::Jsonrpc, addr)
                .await
                .call("py.hang", Params::Positional(vec![1.into()]))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    srv.sighup();
    srv.wait_count("upstream verbs refreshed", 1, Duration::from_secs(15));
    for proto in ClientProto::ALL {
        let r = call(&srv, proto, "py.fresh", vec![]).await;
        assert_eq!(r, Ok(Value::from("fresh")), "{proto}");
        let e = call(&srv, proto, "py.whoami", vec![]).await.unwrap_err();
        assert_eq!(e.code, -32601, "{proto}: a dropped verb is unknown");
    }
    let names = listed(&srv).await;
    assert!(names.iter().any(|n| n == "py.fresh"), "{names:?}");
    assert!(!names.iter().any(|n| n == "py.whoami"), "{names:?}");
    let help = call(
        &srv,
        ClientProto::Xmlrpc,
        "system.methodHelp",
        vec!["py.learn".into()],
    )
    .await;
    assert!(help.unwrap().as_str().unwrap().contains("Serve a new verb"));
    let doc = call(&srv, ClientProto::Jsonrpc, "rpc.discover", vec![])
        .await
        .unwrap();
    let methods = doc.get("methods").and_then(Value::as_array).unwrap();
    assert!(methods
        .iter()
        .any(|m| m.get("name") == Some(&Value::from("py.fresh"))));
    let r = slow.await.unwrap().unwrap();
    assert_eq!(r, Ok(Value::Int(1)), "the call in flight finished");
    // The upstream goes away: the refresh fails, the verbs learned are kept and the
    // failure is counted.
    py.kill();
    srv.sighup();
    srv.wait_count("upstream refresh failed", 1, Duration::from_secs(15));
    let names = listed(&srv).await;
    assert!(names.iter().any(|n| n == "py.fresh"), "kept: {names:?}");
    let failures = metric(
        &srv,
        "rpcmux_upstream_refresh_failures_total{upstream=\"py\"}",
    );
    assert_eq!(failures, Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_timer_learns_new_verbs() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway_with_config(&format!(
        "[[upstream]]\nprefix = \"py\"\nurl = \"{}\"\nrefresh = 0.3\n",
        py.url()
    ));
    let learn = call(&srv, ClientProto::Jsonrpc, "py.learn", vec!["later".into()]).await;
    assert_eq!(learn, Ok(Value::Bool(true)));
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match call(&srv, ClientProto::Msgpack, "py.later", vec![]).await {
            Ok(v) => break assert_eq!(v, Value::from("later")),
            Err(e) => assert_eq!(e.code, -32601),
        }
        assert!(Instant::now() < end, "never learned:\n{}", srv.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_mark_a_down_address_and_see_it_come_back() {
    let first = free_port();
    let second = PyUpstream::start(0, "second");
    let srv = gateway_with_config(&format!(
        "[[upstream]]\nprefix = \"py\"\nurl = [\"xmlrpc+http://127.0.0.1:{first}/RPC2\", \"{}\"]\nhealth_interval = 0.2\n",
        second.url()
    ));
    let gauge = |port: u16| {
        format!("rpcmux_upstream_address_up{{upstream=\"py\",address=\"xmlrpc+http://127.0.0.1:{port}/RPC2\"}}")
    };
    let wait_gauge = |port: u16, want: f64| {
        let end = Instant::now() + Duration::from_secs(10);
        while metric(&srv, &gauge(port)) != Some(want) {
            assert!(
                Instant::now() < end,
                "{} never {want}:\n{}",
                gauge(port),
                srv.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_gauge(first, 0.0);
    assert_eq!(metric(&srv, &gauge(second.port)), Some(1.0));
    srv.wait_count(
        "upstream address failed its health check",
        1,
        Duration::from_secs(15),
    );
    // Marked down by its check, the first address is not tried, also once a failed
    // connect alone would be forgotten (5 s): calls go straight on.
    tokio::time::sleep(Duration::from_millis(5300)).await;
    let before = srv.log().matches("upstream address down").count();
    for _ in 0..5 {
        let r = call(&srv, ClientProto::Jsonrpc, "py.whoami", vec![]).await;
        assert_eq!(r, Ok(Value::from("second")));
    }
    assert_eq!(srv.log().matches("upstream address down").count(), before);
    // It starts: the next check sees it, and calls go to it first again.
    let _first = PyUpstream::start(first, "first");
    wait_gauge(first, 1.0);
    srv.wait_count(
        "upstream address passed its health check",
        1,
        Duration::from_secs(15),
    );
    let r = call(&srv, ClientProto::Jsonrpc, "py.whoami", vec![]).await;
    assert_eq!(r, Ok(Value::from("first")));
}
