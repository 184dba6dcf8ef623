//! rpcmux: one TCP listener, many RPC protocols, one verb table.
//!
//! Every accepted connection is sniffed from its first bytes and handed to the
//! framer for its protocol (XML-RPC, JSON-RPC over HTTP, raw TCP or STOMP,
//! MessagePack-RPC); every framer calls the same [`VerbTable`].
//!
//! A verb takes its parameters as a Rust type and returns any `Serialize` type; its
//! parameter names and schemas come from the types ([`VerbBuilder::typed`]):
//!
//! ```no_run
//! use rpcmux::{Config, RpcError, Server, VerbTable};
//! # async fn run() -> std::io::Result<()> {
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     name: String,
//!     times: Option<u32>,
//! }
//!
//! let mut verbs = VerbTable::new();
//! verbs.verb("greet").help("Say hello.").typed(|p: Greet, _ctx| async move {
//!     let times = p.times.unwrap_or(1) as usize;
//!     Ok::<_, RpcError>(format!("hello, {}! ", p.name).repeat(times))
//! });
//! let server = Server::bind(Config::default(), verbs).await?;
//! server.run(async { tokio::signal::ctrl_c().await.ok(); }).await;
//! # Ok(()) }
//! ```
//!
//! Verbs that want the dynamic [`Value`] model declare their parameters by name and
//! take them as values ([`VerbBuilder::handler`]).
//!
//! Features: `client` (the `client` module), `gateway` (serving the verbs of existing
//! RPC servers, [`gateway`]; needs `client`), `toml` (`Config::from_toml`),
//! `events-redis` (events fanned out through Redis), `cli` (the `rpcmux` binary; on by
//! default, with all of them). `default-features = false` is the server alone. On
//! docs.rs each feature-gated item is labelled with its feature.
//!
//! The library logs through [`tracing`](https://docs.rs/tracing) (refused connections,
//! TLS failures, slow calls, one line per call under the `rpcmux::access` target) and
//! installs no subscriber: an embedder that wants those lines installs one, such as
//! `tracing_subscriber::fmt().with_env_filter(EnvFilter::from_default_env()).init()`
//! (see `examples/embed.rs`).
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// Unit tests allocate as the binary does, so the framer loops in them (`--ignored`)
/// profile what the server runs.
#[cfg(all(test, feature = "cli"))]
#[global_allocator]
static TEST_ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod budget;
#[cfg(feature = "client")]
pub mod client;
mod config;
mod events;
mod front;
pub mod gateway;
mod heavy;
mod io;
mod observe;
mod proxy;
mod server;
mod sniff;
#[cfg(target_os = "linux")]
pub mod systemd;
mod tls;
mod transport;
pub mod verbs;

pub use config::{Config, Limits, OpsConfig, Proto, TlsConfig, TlsMode};
pub use events::{Event, EventHub, EventsConfig, ERR_TOO_MANY_SUBSCRIPTIONS};
pub use observe::AccessLevel;
pub use rpcmux_value::{vstruct, DateTime, Map, Params, RpcError, Value};
pub use server::Server;
pub use tls::TlsReloader;
pub use transport::reply_cap::{ERR_OUTPUT_FULL, ERR_REPLY_TOO_LARGE};
pub use transport::stomp::StompConfig;
pub use transport::websocket::{WebConfig, WsConfig};
pub use verbs::{Args, CallContext, VerbBuilder, VerbTable, WhenBusy};

/// The README's Rust examples, compiled by `cargo test --doc` so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

// What only this repository's binary, tests, benches and fuzz targets use is public but
// hidden, not API (no semver promise): the binary (src/cli) and the integration tests are
// separate crates that see only the library's public items, so these cannot be private.
// `bench` and the demo verbs stay library modules rather than moving into the binary
// because tests/protocols/cli_call_bench.rs drives the load engine in-process and
// benches/dispatch.rs times the demo table; the demo is compiled even without `cli` since
// `Config::demo` turns it on.

/// The load engine behind `rpcmux bench`.
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod bench;
/// The demo verbs behind `Config::demo`.
#[doc(hidden)]
pub mod demo;

/// The sniffer's probes, for benches/dispatch.rs and the fuzz targets.
#[doc(hidden)]
pub mod internals {
    pub use crate::proxy::probe as proxy_probe;
    pub use crate::sniff::{http, json, msgpack_rpc, Detected, Probe, ProbeFn, Probes};
    pub use crate::tls::probe as tls_probe;
    pub use crate::transport::stomp::probe as stomp_probe;

    /// The private PROXY header parser (`cargo fuzz` builds with `--cfg fuzzing`).
    #[cfg(fuzzing)]
    pub use crate::proxy::fuzzing as proxy_header;
}
