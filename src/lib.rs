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
//! })?; // a name registered twice is a `RegisterError`
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

/// Who may call what: credentials files, principals, an embedder's own user store
/// (the rpcmux-auth crate; [`Server::set_auth`], docs/auth.md).
pub use rpcmux_auth as auth;
/// One async client for every protocol rpcmux speaks, with TLS: the rpcmux-client crate.
#[cfg(feature = "client")]
pub use rpcmux_client as client;
pub mod codes;
pub mod config;
mod conn;
mod events;
mod front;
#[cfg(feature = "gateway")]
#[cfg_attr(docsrs, doc(cfg(feature = "gateway")))]
pub mod gateway;
mod http;
mod io;
mod observe;
mod offload;
mod rpc;
mod server;
mod shared;
mod sniff;
mod stream;
#[cfg(target_os = "linux")]
pub mod systemd;
mod verbs;

// The settings most embedders touch, also at the root; every section type is in
// [`config`].
pub use config::{
    AccessLevel, Config, EventsConfig, Limits, OpsConfig, Proto, StompConfig, TlsConfig, TlsMode,
    WebConfig, WsConfig,
};
pub use conn::PeerCred;
pub use events::EventHub;
pub use front::tls::TlsReloader;
pub use rpcmux_value::{vstruct, DateTime, Map, Params, RpcError, Str, Value};
pub use server::{PassedListener, Server};
pub use verbs::{
    Args, CallContext, ParamSpec, RegisterError, Verb, VerbBuilder, VerbTable, WhenBusy,
};

/// The README's Rust examples, compiled by `cargo test --doc` so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

/// The demo verbs `rpcmux serve` serves (`ping`, `echo`, `VM.*`, ...): registered by
/// [`Server::bind`] when [`Config::demo`] is set, or by [`demo::register`] into any table.
#[cfg(feature = "demo")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo")))]
pub mod demo;
