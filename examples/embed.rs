//! Embedding rpcmux: your own verbs on one port for every protocol, plus events.
//!
//! ```sh
//! cargo run --example embed
//! curl -s localhost:7777/ -d '{"jsonrpc":"2.0","method":"counter.add","params":{"n":5},"id":1}'
//! python3 -c 'import xmlrpc.client as x; print(x.ServerProxy("http://127.0.0.1:7777/").counter.get())'
//! ```

use rpcmux::{vstruct, Config, Map, RpcError, Server, Value, VerbTable};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let counter = Arc::new(AtomicI64::new(0));
    let mut verbs = VerbTable::new();

    let c = counter.clone();
    verbs
        .verb("counter.add")
        .typed_param("n", "int", false)
        .returns("int")
        .help("Add n to the counter; publishes |counter|changed.")
        .handler(move |mut args, ctx| {
            let c = c.clone();
            async move {
                let n: i64 = args.take(0)?;
                if n < 0 {
                    return Err(RpcError::new(10, "n must not be negative"));
                }
                let now = c.fetch_add(n, Ordering::Relaxed) + n;
                let mut params = Map::new();
                params.insert("value".into(), Value::Int(now));
                ctx.events.publish("|counter|changed", params);
                Ok(Value::Int(now))
            }
        });

    let c = counter.clone();
    verbs
        .verb("counter.get")
        .returns("struct")
        .help("Read the counter.")
        .handler(move |_, ctx| {
            let v = c.load(Ordering::Relaxed);
            async move { Ok(vstruct! { "value" => v, "via" => ctx.protocol }) }
        });
    verbs.alias("get", "counter.get");

    // The library's default serves only these verbs (no demo verbs).
    let config = Config {
        listen: vec!["127.0.0.1:7777".parse().unwrap()],
        ..Config::default()
    };
    let server = Server::bind(config, verbs).await?;
    // One line per listener, as `rpcmux serve` prints them.
    for addr in server.local_addrs() {
        println!("listening on {addr}");
    }
    server
        .run(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    Ok(())
}
