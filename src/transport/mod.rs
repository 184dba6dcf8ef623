//! Framers: what runs on a connection once the sniffer has named its protocol.

pub mod http;
pub mod json_tcp;
pub(crate) mod jsonrpc;
pub(crate) mod session;
