//! Framers: what runs on a connection once the sniffer has named its protocol.

mod console;
pub mod http;
mod http_body;
mod http_encoding;
pub(crate) mod http_reply;
pub mod json_tcp;
pub(crate) mod jsonrpc;
pub(crate) mod metrics_only;
pub(crate) mod msgpack;
pub(crate) mod origin;
pub(crate) mod out;
pub mod reply_cap;
pub(crate) mod session;
pub mod stomp;
pub mod websocket;
pub(crate) mod xmlrpc;
