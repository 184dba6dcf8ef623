//! rpcmux as a library: your own verbs, served in-process, with panics contained.

use crate::common::{http_post, json};
use rpcmux::{Config, Map, RpcError, Server, Value, VerbTable};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_verbs_and_a_panicking_handler() {
    let mut verbs = VerbTable::new();
    verbs
        .verb("math.add")
        .typed_param("a", "int", false)
        .typed_param("b", "int", false)
        .returns("int")
        .help("Add two ints.")
        .handler(|mut args, _ctx| async move {
            let (a, b): (i64, i64) = (args.take(0)?, args.take(1)?);
            a.checked_add(b)
                .map(Value::Int)
                .ok_or_else(|| RpcError::new(100, "overflow"))
        })
        .unwrap();
    verbs
        .verb("boom")
        .handler(|_, _| async { panic!("handler bug") })
        .unwrap();
    let config = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        demo: false,
        ..Config::default()
    };
    let server = Server::bind(config, verbs).await.unwrap();
    let addr = server.local_addrs()[0];
    let stop = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stop.1.await;
    }));

    let post = move |body: &'static [u8]| {
        tokio::task::spawn_blocking(move || json(&http_post(addr, None, body).2))
    };
    let v = post(br#"{"jsonrpc":"2.0","method":"math.add","params":{"b":2,"a":40},"id":1}"#)
        .await
        .unwrap();
    assert_eq!(v["result"], 42);
    let v = post(br#"{"jsonrpc":"2.0","method":"boom","id":2}"#)
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], -32603);
    let v =
        post(br#"{"jsonrpc":"2.0","method":"math.add","params":[9223372036854775807,1],"id":3}"#)
            .await
            .unwrap();
    assert_eq!(
        (v["error"]["code"].clone(), v["error"]["message"].clone()),
        (100.into(), "overflow".into())
    );
    let v = post(br#"{"jsonrpc":"2.0","method":"ping","id":4}"#)
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], -32601, "demo verbs are off");
    let v = post(br#"{"jsonrpc":"2.0","method":"system.methodHelp","params":["math.add"],"id":5}"#)
        .await
        .unwrap();
    assert_eq!(v["result"], "Add two ints.");
    stop.0.send(()).unwrap();
    task.await.unwrap();
}

/// `Config::default()` (the README's snippet) serves the embedder's verbs only: its own
/// `echo` answers, and no demo verb exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_config_serves_only_the_embedders_verbs() {
    let mut verbs = VerbTable::new();
    verbs
        .verb("echo")
        .param("value")
        .handler(|mut args, _ctx| async move {
            let mut m = Map::new();
            m.insert("mine", args.take_value(0));
            Ok(Value::from(m))
        })
        .unwrap();
    let config = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..Config::default()
    };
    assert!(!config.demo);
    let server = Server::bind(config, verbs).await.unwrap();
    let addr = server.local_addrs()[0];
    let stop = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stop.1.await;
    }));
    let call = move |method: &str, params: &str| {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params},"id":1}}"#);
        tokio::task::spawn_blocking(move || json(&http_post(addr, None, body.as_bytes()).2))
    };
    let v = call("echo", r#"["hi"]"#).await.unwrap();
    assert_eq!(v["result"], serde_json::json!({"mine": "hi"}), "{v}");
    for demo in ["VM.create", "ping", "Host.getVMList"] {
        let v = call(demo, "[]").await.unwrap();
        assert_eq!(v["error"]["code"], -32601, "{demo}: {v}");
    }
    stop.0.send(()).unwrap();
    task.await.unwrap();
}
