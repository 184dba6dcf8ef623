//! Embedding rpcmux: your own verbs on one port for every protocol: typed verbs, a
//! dynamic one, events, per-verb limits and server-wide limits.
//!
//! ```sh
//! cargo run --example embed
//! curl -s localhost:7777/ -d '{"jsonrpc":"2.0","method":"counter.add","params":{"n":5},"id":1}'
//! python3 -c 'import xmlrpc.client as x; print(x.ServerProxy("http://127.0.0.1:7777/").counter.get())'
//! curl -s localhost:7777/ -d '{"jsonrpc":"2.0","method":"rpc.discover","id":1}'   # OpenRPC
//! # events: subscribe on a raw-TCP connection, then add from another one
//! (printf '{"jsonrpc":"2.0","method":"subscribe","params":["|counter|"],"id":1}\n'; sleep 5) | nc localhost 7777
//! ```

use rpcmux::{Config, Limits, Map, RpcError, Server, Value, VerbTable, WhenBusy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `counter.add`'s parameters: `[n]` by position, or `{"n": ...}` by name.
#[derive(Deserialize, JsonSchema)]
struct Add {
    /// How much to add (not negative).
    n: i64,
}

/// What `counter.get` answers.
#[derive(Serialize, JsonSchema)]
struct Reading {
    value: i64,
    /// The protocol the caller used.
    via: &'static str,
}

/// The counter's domain errors, each with its own code in every protocol.
enum CounterError {
    Negative,
    Overflow,
}

impl From<CounterError> for RpcError {
    fn from(e: CounterError) -> Self {
        match e {
            CounterError::Negative => RpcError::new(10, "n must not be negative"),
            CounterError::Overflow => RpcError::new(11, "the counter would overflow"),
        }
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // rpcmux logs through `tracing` (refused connections, TLS failures, slow calls, the
    // access log under `rpcmux::access`); without a subscriber those lines go nowhere.
    // This one prints them to stderr, filtered by RUST_LOG (default: info).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let counter = Arc::new(AtomicI64::new(0));
    let mut verbs = VerbTable::new();

    let c = counter.clone();
    verbs
        .verb("counter.add")
        .help("Add n to the counter; publishes |counter|changed.")
        .typed(move |p: Add, ctx| {
            let c = c.clone();
            async move {
                if p.n < 0 {
                    return Err(CounterError::Negative);
                }
                let before = c.load(Ordering::Relaxed);
                let now = before.checked_add(p.n).ok_or(CounterError::Overflow)?;
                c.store(now, Ordering::Relaxed);
                let mut params = Map::new();
                params.insert("value", Value::Int(now));
                ctx.events.publish("|counter|changed", params);
                Ok(now)
            }
        })?;

    // A verb that answers without waiting can be synchronous: no future, answered as
    // its call is read.
    let c = counter.clone();
    verbs
        .verb("counter.get")
        .help("Read the counter.")
        .typed_sync(move |(): (), ctx| {
            Ok::<_, RpcError>(Reading {
                value: c.load(Ordering::Relaxed),
                via: ctx.protocol,
            })
        })?;
    verbs.alias("get", "counter.get")?;

    // A slow verb with a policy: cancelled after 2 s (error -32004), at most 4 at once,
    // a fifth refused at once (error -32005) rather than queued.
    verbs
        .verb("report")
        .help("Build a report (slow).")
        .timeout(Duration::from_secs(2))
        .max_concurrent(4)
        .when_busy(WhenBusy::Refuse)
        .typed(|(seconds,): (u64,), _ctx| async move {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            Ok::<_, RpcError>(format!("report after {seconds} s"))
        })?;

    // A dynamic verb: any value in, the same value out.
    verbs
        .verb("echo")
        .param("value")
        .help("Return value unchanged.")
        .handler(|mut args, _ctx| async move { Ok(args.take_value(0)) })?;

    // The library's default serves only these verbs (no demo verbs); server-wide limits
    // bound what any one request may cause (see docs/limits.md).
    let config = Config {
        listen: vec!["127.0.0.1:7777".parse().unwrap()],
        limits: Limits {
            max_connections: 1_000,
            max_frame: 1 << 20,
            ..Limits::default()
        },
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
