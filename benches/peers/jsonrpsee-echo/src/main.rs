//! jsonrpsee on the other side of rpcmux, for benches/compare.sh and the tests.
//!
//! - `jsonrpsee-echo ADDR`: jsonrpsee's HTTP server with the two methods the benchmark
//!   calls: `echo(value)` returns value, `ping()` returns true.
//! - `jsonrpsee-echo --ws ADDR`: the same server serving WebSocket too, on the same port
//!   (jsonrpsee's default; the WebSocket row of compare.sh).
//! - `jsonrpsee-echo --client URL`: jsonrpsee's own WebSocket client against rpcmux's
//!   demo verbs (tests/web/websocket.rs): calls, a batch, a `VM.create` event received
//!   as a notification, and events through jsonrpsee's own subscriptions (`subscribe`
//!   with `notify`). Prints `ok ...` lines; exits non-zero on any mismatch.
//!
//! Port 0 picks one; the servers print `listening on IP:PORT`.

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::core::params::{ArrayParams, BatchRequestBuilder, ObjectParams};
use jsonrpsee::server::{RpcModule, Server, ServerConfig};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::ws_client::WsClientBuilder;
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--client") => client(args.get(1).ok_or("--client URL")?).await,
        Some("--ws") => serve(args.get(1).cloned(), true).await,
        _ => serve(args.first().cloned(), false).await,
    }
}

async fn serve(addr: Option<String>, ws: bool) -> Result<(), Error> {
    let addr = addr.unwrap_or_else(|| "127.0.0.1:0".into());
    // Room for the benchmark's connections (the default cap is 100).
    let config = ServerConfig::builder().max_connections(10_000);
    let config = if ws { config } else { config.http_only() };
    let server = Server::builder()
        .set_config(config.build())
        .build(addr)
        .await?;
    let mut module = RpcModule::new(());
    module.register_method("echo", |params, _, _| {
        params
            .one::<serde_json::Value>()
            .map_err(ErrorObjectOwned::from)
    })?;
    module.register_method("ping", |_, _, _| true)?;
    println!("listening on {}", server.local_addr()?);
    let handle = server.start(module);
    handle.stopped().await;
    Ok(())
}

fn params(values: &[Value]) -> Result<ArrayParams, Error> {
    let mut p = ArrayParams::new();
    for v in values {
        p.insert(v)?;
    }
    Ok(p)
}

fn check(what: &str, got: &Value, want: &Value) -> Result<(), Error> {
    if got != want {
        return Err(format!("{what}: got {got}, want {want}").into());
    }
    println!("ok {what}");
    Ok(())
}

async fn client(url: &str) -> Result<(), Error> {
    let c = WsClientBuilder::default().build(url).await?;
    let pong: Value = c.request("ping", params(&[])?).await?;
    check("ping", &pong, &json!(true))?;
    let entry = json!({"title": "Sunrise", "artist": "Ana", "year": 1999,
                       "rating": 4.75, "tags": ["a", "é"], "big": 9007199254740993u64});
    let echoed: Value = c.request("echo", params(&[entry.clone()])?).await?;
    check("echo", &echoed, &entry)?;

    let mut batch = BatchRequestBuilder::new();
    batch.insert("ping", params(&[])?)?;
    batch.insert("echo", params(&[json!(42)])?)?;
    let replies = c.batch_request::<Value>(batch).await?;
    let got: Vec<Value> = replies
        .into_ok()
        .map_err(|_| "a batch member failed")?
        .collect();
    check("batch", &json!(got), &json!([true, 42]))?;

    // rpcmux's events are notifications named after the event: jsonrpsee receives
    // them through a method subscription.
    let mut events = c
        .subscribe_to_method::<Value>("|virt|VM_status|jsonrpsee-vm")
        .await?;
    let _: Value = c.request("subscribe", params(&[json!("|virt|")])?).await?;
    let mut create = ObjectParams::new();
    create.insert("vmID", "jsonrpsee-vm")?;
    create.insert("name", "n")?;
    create.insert("memSize", 64)?;
    let vm: Value = c.request("VM.create", create).await?;
    check("VM.create", &vm["vmId"], &json!("jsonrpsee-vm"))?;
    let event = tokio::time::timeout(std::time::Duration::from_secs(10), events.next())
        .await?
        .ok_or("event subscription ended")??;
    check("event", &event["jsonrpsee-vm"]["status"], &json!("Up"))?;

    // jsonrpsee's own subscriptions: `subscribe` with `notify` answers a subscription id
    // and sends `{"subscription": id, "result": event}` notifications, which the client
    // routes to this stream by id.
    let mut sub_params = ObjectParams::new();
    sub_params.insert("pattern", "|virt|VM_status|jsonrpsee-sub")?;
    sub_params.insert("notify", "subscription")?;
    let mut sub = c
        .subscribe::<Value, _>("subscribe", sub_params, "unsubscribe")
        .await?;
    let mut create = ObjectParams::new();
    create.insert("vmID", "jsonrpsee-sub")?;
    create.insert("name", "n")?;
    create.insert("memSize", 64)?;
    let _: Value = c.request("VM.create", create).await?;
    let event = tokio::time::timeout(std::time::Duration::from_secs(10), sub.next())
        .await?
        .ok_or("subscription ended")??;
    check(
        "subscription name",
        &event["name"],
        &json!("|virt|VM_status|jsonrpsee-sub"),
    )?;
    check(
        "subscription event",
        &event["params"]["jsonrpsee-sub"]["status"],
        &json!("Up"),
    )?;
    let destroyed: Value = c
        .request("VM.destroy", params(&[json!("jsonrpsee-sub")])?)
        .await?;
    let event = tokio::time::timeout(std::time::Duration::from_secs(10), sub.next())
        .await?
        .ok_or("subscription ended")??;
    check(
        "subscription second event",
        &event["name"],
        &json!("|virt|VM_status|jsonrpsee-sub"),
    )?;
    let _ = destroyed;
    sub.unsubscribe().await?;
    println!("ok unsubscribed");

    // Resuming in that shape: with since "0" the retained events come after the reply
    // that names the subscription (jsonrpsee drops notifications for an id it does not
    // know yet), the VM's two, in order.
    let mut again_params = ObjectParams::new();
    again_params.insert("pattern", "|virt|VM_status|jsonrpsee-sub")?;
    again_params.insert("notify", "subscription")?;
    again_params.insert("since", "0")?;
    let mut again = c
        .subscribe::<Value, _>("subscribe", again_params, "unsubscribe")
        .await?;
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), again.next())
            .await?
            .ok_or("subscription ended")??;
        if !event["params"]["event_id"].is_string() {
            return Err(format!("a resumed event without event_id: {event}").into());
        }
        statuses.push(event["params"]["jsonrpsee-sub"]["status"].clone());
    }
    check(
        "replayed in order",
        &json!(statuses),
        &json!(["Up", "Down"]),
    )?;
    Ok(())
}
