//! JSON-RPC 2.0 messages for rpcmux, pure (no I/O): parse requests and batches,
//! write responses straight into a byte buffer, and split a raw TCP byte stream into
//! JSON values (for JSON-RPC over TCP, where requests arrive concatenated or one per line).
//!
//! Parsing takes a fast typed path; only when that fails does it re-read the input
//! as a generic JSON tree, to tell a parse error (-32700) from an invalid request
//! (-32600) and to recover the request id for the error reply.

mod id;
mod request;
mod response;
mod split;

pub use id::Id;
pub use request::{parse, Failed, Incoming, Request};
pub use response::{
    parse_response, parse_response_or_notification, write_error, write_notification, write_request,
    write_result, Response,
};
pub use split::{Split, Splitter};
