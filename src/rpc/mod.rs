//! The RPC reply encoders shared by several transports: JSON-RPC 2.0 (HTTP, raw TCP,
//! STOMP, WebSocket) and XML-RPC.

pub(crate) mod jsonrpc;
