//! rpcmux: one TCP listener, many RPC protocols, one verb table.
//!
//! Every accepted connection is sniffed from its first bytes and handed to the
//! framer for its protocol (JSON-RPC over HTTP or raw TCP, and more as they are
//! added); every framer calls the same [`VerbTable`].
//!
//! ```no_run
//! use rpcmux::{Config, Server, VerbTable, Value};
//! # async fn run() -> std::io::Result<()> {
//! let mut verbs = VerbTable::new();
//! verbs
//!     .verb("greet")
//!     .param("name")
//!     .help("Say hello.")
//!     .handler(|mut args, _ctx| async move {
//!         let name: String = args.take(0)?;
//!         Ok(Value::from(format!("hello, {name}")))
//!     });
//! let server = Server::bind(Config::default(), verbs).await?;
//! server.run(async { tokio::signal::ctrl_c().await.ok(); }).await;
//! # Ok(()) }
//! ```

pub mod bench;
mod budget;
pub mod client;
pub mod config;
pub mod demo;
pub mod events;
mod front;
mod heavy;
pub mod io;
pub mod proxy;
pub mod server;
pub mod sniff;
pub mod tls;
pub mod transport;
pub mod verbs;

pub use config::{Config, Limits};
pub use events::{Event, EventHub};
pub use rpcmux_value::{vstruct, DateTime, Map, Params, RpcError, Value};
pub use server::Server;
pub use verbs::{Args, CallContext, VerbTable};
