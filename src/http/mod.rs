//! HTTP/1.1 and HTTP/2 (told apart in [`entry`]): the hyper service that routes
//! XML-RPC, JSON-RPC and msgpack-rpc bodies, the WebSocket upgrade, `/health`, `/ready`, `/metrics` and the console; request
//! bodies (limits, encodings), reply bodies (charged to the output budget), and the
//! origin checks a browser's requests pass.

mod auth;
pub(crate) mod body;
mod console;
mod content_length;
pub(crate) mod encoding;
pub(crate) mod entry;
mod h2;
mod h2_progress;
pub(crate) mod metrics_only;
pub(crate) mod origin;
pub(crate) mod reply;
pub(crate) mod service;
mod xmlrpc;
