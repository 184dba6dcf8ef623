//! Typed verbs over every protocol: parameters by position and by name, optional ones,
//! type mismatches naming the parameter, domain errors with their codes, per-verb
//! timeout and concurrency cap, schemas in introspection, and `rpc.discover` validated
//! against the official OpenRPC meta-schema by Python's `jsonschema`.

use crate::common;
use rpcmux::client::{Client, ClientProto, ConnectOpts};
use rpcmux::{vstruct, Config, Params, RpcError, Server, Value, VerbTable, WhenBusy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct Resize {
    /// The VM to resize.
    #[serde(rename = "vmID")]
    vm_id: String,
    /// New memory size in MiB.
    mem: u32,
    /// Why (optional).
    reason: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct Resized {
    #[serde(rename = "vmID")]
    vm_id: String,
    mem: u32,
    reason: String,
}

/// A result whose `Serialize` writes a field and then panics.
#[derive(JsonSchema)]
struct PanicsHalfWay;

impl Serialize for PanicsHalfWay {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("PanicsHalfWay", 2)?;
        st.serialize_field("written", "half")?;
        panic!("PanicsHalfWay");
    }
}

/// Code of the domain error `VM.resize` answers for `mem: 0`.
const ERR_BAD_SIZE: i64 = 7;

/// `VM.resize`'s work, the same for its async and its synchronous form.
fn resize(p: Resize) -> Result<Resized, RpcError> {
    if p.mem == 0 {
        return Err(RpcError::new(ERR_BAD_SIZE, "mem must be positive"));
    }
    Ok(Resized {
        vm_id: p.vm_id,
        mem: p.mem,
        reason: p.reason.unwrap_or_else(|| "none".into()),
    })
}

fn verbs() -> VerbTable {
    let mut verbs = VerbTable::new();
    verbs
        .verb("VM.resize")
        .help("Resize a VM.")
        .typed(|p: Resize, _ctx| async move { resize(p) })
        .unwrap();
    verbs
        .verb("slow")
        .help("Sleep ms milliseconds.")
        .timeout(Duration::from_millis(200))
        .typed(|(ms,): (u64,), _ctx| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })
        .unwrap();
    verbs
        .verb("single")
        .help("Sleep 400 ms, one call at a time.")
        .max_concurrent(1)
        .when_busy(WhenBusy::Refuse)
        .typed(|(): (), _ctx| async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Ok::<_, RpcError>(true)
        })
        .unwrap();
    // The same verb, synchronous: answered as it is read, no future.
    verbs
        .verb("VM.resizeNow")
        .help("Resize a VM, synchronously.")
        .typed_sync(|p: Resize, _ctx| resize(p))
        .unwrap();
    // A small request for a big reply: the reply cap holds for a result written as the
    // handler returns it.
    verbs
        .verb("inflateNow")
        .help("A string of n bytes, synchronously.")
        .typed_sync(|(n,): (usize,), _ctx| Ok::<_, RpcError>("x".repeat(n.min(1 << 20))))
        .unwrap();
    verbs
        .verb("halfWrittenNow")
        .help("A result whose Serialize panics after its first field, synchronously.")
        .typed_sync(|(): (), _ctx| Ok::<_, RpcError>(PanicsHalfWay))
        .unwrap();
    verbs
        .verb("boomNow")
        .help("Panic, synchronously.")
        .typed_sync(|(): (), _ctx| -> Result<bool, RpcError> { panic!("boom") })
        .unwrap();
    // A capped synchronous verb runs once admitted, as a task.
    verbs
        .verb("countNow")
        .help("Count the calls.")
        .max_concurrent(1)
        .typed_sync({
            let n = std::sync::atomic::AtomicU64::new(0);
            move |(): (), _ctx| {
                Ok::<_, RpcError>(n.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1)
            }
        })
        .unwrap();
    verbs
}

async fn serve() -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    serve_with(Config::default()).await
}

async fn serve_with(config: Config) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let config = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..config
    };
    let server = Server::bind(config, verbs()).await.unwrap();
    let addr = server.local_addrs()[0];
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

async fn call(c: &Client, method: &str, params: Params) -> Result<Value, RpcError> {
    c.call(method, params).await.expect("transport")
}

fn pos(v: Vec<Value>) -> Params {
    Params::Positional(v)
}

fn named(v: Value) -> Params {
    match v {
        Value::Struct(m) => Params::Named(*m),
        _ => unreachable!(),
    }
}

fn resized(mem: i64, reason: &str) -> Value {
    vstruct! { "vmID" => "a", "mem" => mem, "reason" => reason }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_verb_over_every_protocol() {
    let (addr, _stop) = serve().await;
    for proto in ClientProto::ALL {
        let c = Client::connect(proto, &addr.to_string(), ConnectOpts::default())
            .await
            .unwrap();
        let r = call(&c, "VM.resize", pos(vec!["a".into(), 512.into()])).await;
        assert_eq!(r, Ok(resized(512, "none")), "{proto}: positional");
        let r = call(
            &c,
            "VM.resize",
            pos(vec!["a".into(), 512.into(), "grow".into()]),
        )
        .await;
        assert_eq!(r, Ok(resized(512, "grow")), "{proto}: optional given");
        if proto.named_params() {
            let p = named(vstruct! { "mem" => 64, "vmID" => "a" });
            let r = call(&c, "VM.resize", p).await;
            assert_eq!(r, Ok(resized(64, "none")), "{proto}: named");
            let p = named(vstruct! { "vmID" => "a", "mem" => 1, "bogus" => 1 });
            let e = call(&c, "VM.resize", p).await.unwrap_err();
            assert_eq!(e.code, -32602, "{proto}: {e}");
            assert!(e.message.contains("bogus"), "{proto}: {e}");
        }
        let e = call(&c, "VM.resize", pos(vec!["a".into(), "big".into()]))
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602, "{proto}: {e}");
        assert!(
            e.message.contains("parameter `mem`") && e.message.contains("expected u32"),
            "{proto}: the error names the parameter and the type: {e}"
        );
        let e = call(&c, "VM.resize", pos(vec![1.into(), 5.into()]))
            .await
            .unwrap_err();
        assert!(
            e.code == -32602 && e.message.contains("parameter `vmID`"),
            "{proto}: {e}"
        );
        let e = call(&c, "VM.resize", pos(vec!["a".into()]))
            .await
            .unwrap_err();
        assert!(
            e.code == -32602 && e.message.contains("missing parameter `mem`"),
            "{proto}: {e}"
        );
        let four = pos(vec!["a".into(), 1.into(), "grow".into(), 4.into()]);
        let e = call(&c, "VM.resize", four).await.unwrap_err();
        assert!(
            e.code == -32602 && e.message.contains("takes at most 3 parameter(s), got 4"),
            "{proto}: {e}"
        );
        let e = call(&c, "VM.resize", pos(vec!["a".into(), (-1).into()]))
            .await
            .unwrap_err();
        assert!(
            e.code == -32602 && e.message.contains("`mem`"),
            "{proto}: {e}"
        );
        let e = call(&c, "VM.resize", pos(vec!["a".into(), 0.into()]))
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ERR_BAD_SIZE, "mem must be positive"),
            "{proto}: the domain error keeps its code"
        );
        let e = call(&c, "slow", pos(vec![5_000.into()])).await.unwrap_err();
        assert_eq!(e.code, rpcmux::codes::ERR_TIMEOUT, "{proto}: {e}");
        assert_eq!(call(&c, "slow", pos(vec![1.into()])).await, Ok(1.into()));
    }
}

/// A synchronous typed verb (`typed_sync`) behaves as the async one over every
/// protocol: parameters by position and name, mismatches naming the parameter, its
/// domain error's code; a panic is -32603 and the connection goes on; a capped one
/// answers every pipelined call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synchronous_typed_verb_over_every_protocol() {
    let (addr, _stop) = serve().await;
    for proto in ClientProto::ALL {
        let c = Client::connect(proto, &addr.to_string(), ConnectOpts::default())
            .await
            .unwrap();
        let r = call(&c, "VM.resizeNow", pos(vec!["a".into(), 512.into()])).await;
        assert_eq!(r, Ok(resized(512, "none")), "{proto}: positional");
        if proto.named_params() {
            let p = named(vstruct! { "mem" => 64, "vmID" => "a", "reason" => "r" });
            let r = call(&c, "VM.resizeNow", p).await;
            assert_eq!(r, Ok(resized(64, "r")), "{proto}: named");
        }
        let e = call(&c, "VM.resizeNow", pos(vec!["a".into(), "big".into()]))
            .await
            .unwrap_err();
        assert!(
            e.code == -32602 && e.message.contains("parameter `mem`"),
            "{proto}: {e}"
        );
        let e = call(&c, "VM.resizeNow", pos(vec!["a".into(), 0.into()]))
            .await
            .unwrap_err();
        assert_eq!(e.code, ERR_BAD_SIZE, "{proto}: {e}");
        let e = call(&c, "boomNow", pos(vec![])).await.unwrap_err();
        assert_eq!(e.code, -32603, "{proto}: {e}");
        // A result written as the handler returns it, whose Serialize panics half way:
        // a clean -32603, nothing of the half-written result in the reply.
        let e = call(&c, "halfWrittenNow", pos(vec![])).await.unwrap_err();
        assert_eq!(e.code, -32603, "{proto}: {e}");
        let counts =
            futures_util::future::join_all((0..20).map(|_| call(&c, "countNow", pos(vec![]))))
                .await;
        assert!(counts.iter().all(|r| r.is_ok()), "{proto}: {counts:?}");
        let r = call(&c, "VM.resizeNow", pos(vec!["b".into(), 1.into()])).await;
        assert!(
            r.is_ok(),
            "{proto}: the connection serves on after the panic"
        );
    }
}

/// A synchronous typed verb's result is written into the reply as the handler returns
/// it (no box, no queue); the reply cap still holds for it, in every protocol's shape,
/// and the connection serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_written_at_once_is_still_capped() {
    let mut config = Config::default();
    config.limits.max_reply = 64 * 1024;
    let (addr, _stop) = serve_with(config).await;
    for proto in ClientProto::ALL {
        let c = Client::connect(proto, &addr.to_string(), ConnectOpts::default())
            .await
            .unwrap();
        let e = call(&c, "inflateNow", pos(vec![100_000.into()]))
            .await
            .unwrap_err();
        assert_eq!(e.code, -32003, "{proto}: {e}");
        let r = call(&c, "inflateNow", pos(vec![60_000.into()])).await;
        assert_eq!(r, Ok(Value::from("x".repeat(60_000))), "{proto}");
    }
}

/// Two calls of a `max_concurrent(1)` verb that refuses when busy: one runs, the other
/// gets -32005 at once; over a pipelined protocol and over two HTTP connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_verb_refuses_the_second_call() {
    let (addr, _stop) = serve().await;
    for proto in [ClientProto::Msgpack, ClientProto::Jsonrpc] {
        let a = Arc::new(
            Client::connect(proto, &addr.to_string(), ConnectOpts::default())
                .await
                .unwrap(),
        );
        let b = Client::connect(proto, &addr.to_string(), ConnectOpts::default())
            .await
            .unwrap();
        let first = tokio::spawn({
            let a = a.clone();
            async move { call(&a, "single", pos(vec![])).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let e = call(&b, "single", pos(vec![])).await.unwrap_err();
        assert_eq!(e.code, rpcmux::codes::ERR_BUSY, "{proto}: {e}");
        assert_eq!(first.await.unwrap(), Ok(true.into()), "{proto}");
        assert_eq!(call(&b, "single", pos(vec![])).await, Ok(true.into()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_comes_from_the_types() {
    let (addr, _stop) = serve().await;
    let c = Client::connect(
        ClientProto::Xmlrpc,
        &addr.to_string(),
        ConnectOpts::default(),
    )
    .await
    .unwrap();
    let sig = call(&c, "system.methodSignature", pos(vec!["VM.resize".into()])).await;
    let want = Value::Array(vec![Value::Array(
        ["struct", "string", "int", "string"]
            .into_iter()
            .map(Value::from)
            .collect(),
    )]);
    assert_eq!(sig, Ok(want));
    let help = call(&c, "system.methodHelp", pos(vec!["slow".into()])).await;
    let help = help.unwrap();
    let help = help.as_str().unwrap();
    assert!(
        help.starts_with("Sleep ms milliseconds.") && help.contains("-32004"),
        "{help}"
    );

    // rpc.discover: the document, then a real validator against the OpenRPC meta-schema.
    let j = Client::connect(
        ClientProto::Jsonrpc,
        &addr.to_string(),
        ConnectOpts::default(),
    )
    .await
    .unwrap();
    let doc = call(&j, "rpc.discover", pos(vec![])).await.unwrap();
    let methods = doc.get("methods").and_then(Value::as_array).unwrap();
    let resize = methods
        .iter()
        .find(|m| m.get("name") == Some(&Value::from("VM.resize")))
        .expect("VM.resize is described");
    let params: Vec<(String, bool)> = resize
        .get("params")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|p| {
            let name = p.get("name").and_then(Value::as_str).unwrap().to_owned();
            (name, p.get("required") == Some(&Value::Bool(true)))
        })
        .collect();
    assert_eq!(
        params,
        [
            ("vmID".to_string(), true),
            ("mem".to_string(), true),
            ("reason".to_string(), false)
        ]
    );
    let url = format!("http://{addr}/");
    let out = tokio::task::spawn_blocking(move || common::run_py("openrpc_validate.py", &[&url]))
        .await
        .unwrap();
    assert!(out.starts_with("valid: "), "{out}");
}

/// `subscribe` is a built-in: an embedder without the demo verbs can publish events and
/// a client receive them; another connection cannot cancel the subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_built_in_and_owned_by_their_connection() {
    let (addr, _stop) = serve().await;
    let sub = Client::connect(
        ClientProto::JsonrpcTcp,
        &addr.to_string(),
        ConnectOpts::default(),
    )
    .await
    .unwrap();
    let id = call(&sub, "subscribe", pos(vec!["*".into()]))
        .await
        .unwrap();
    let other = Client::connect(
        ClientProto::JsonrpcTcp,
        &addr.to_string(),
        ConnectOpts::default(),
    )
    .await
    .unwrap();
    let r = call(&other, "unsubscribe", pos(vec![id.clone()])).await;
    assert_eq!(r, Ok(false.into()), "another connection cannot cancel it");
    let http = Client::connect(
        ClientProto::Jsonrpc,
        &addr.to_string(),
        ConnectOpts::default(),
    )
    .await
    .unwrap();
    let e = call(&http, "subscribe", pos(vec!["*".into()]))
        .await
        .unwrap_err();
    assert_eq!(e.code, rpcmux::codes::ERR_NO_EVENTS_HERE);
    assert_eq!(
        call(&sub, "unsubscribe", pos(vec![id])).await,
        Ok(true.into())
    );
}
