//! JSON-RPC 2.0 messages for rpcmux, pure (no I/O): parse requests and batches,
//! write responses straight into a byte buffer, and split a raw TCP byte stream into
//! JSON values (for JSON-RPC over TCP, where requests arrive concatenated or one per line).
//!
//! JSON-RPC 1.0 requests (no `"jsonrpc"` member) are read too, marked [`Version::V1`],
//! and answered in 1.0's shape by the `_in` writers (`{"result":…,"error":null,"id":…}`);
//! in 1.0 a null id is a notification. Batches follow 2.0's rules whatever their members
//! speak, each member answered in its own version.
//!
//! Parsing takes a fast typed path; only when that fails does it re-read the input
//! as a generic JSON tree, to tell a parse error (-32700) from an invalid request
//! (-32600) and to recover the request id for the error reply.
//!
//! Exactness, both ways:
//! - **Doubles** read to the exact bits their text names (serde_json's `float_roundtrip`
//!   parser; the default one is off by one ULP on ~10% of random doubles) and are written
//!   in the shortest text that reads back to the same bits (ryu). NaN and ±infinity have
//!   no JSON spelling: serde_json writes them as `null`.
//! - **Integers** within i64 are ints. A literal beyond i64 (`18446744073709551615`,
//!   `123456789012345678901234567890`) becomes a double only if that double is exactly
//!   it (`9223372036854775808`); otherwise the request is refused with -32602 "integer …
//!   is beyond the 64-bit signed range and no double holds it exactly", never silently
//!   rounded. A literal with a fraction or exponent (`1e2`, `0.1`) is a double by its
//!   spelling (`1e2` is the double 100, written back `100.0`). Every number written in
//!   `params` is judged, also one in a member a repeat of its name overrides (JSON
//!   leaves repeated names' meaning open; rpcmux refuses rather than drop it unseen).
//!   See `exact.rs`.
//! - **Ids** are echoed byte for byte: a number id is kept as the text the client sent
//!   ([`IdNumber`]), so `1e2`, `-0`, `1.50` and 30-digit ids come back as they were.
//!
//! Batches are capped while they are parsed ([`ParseLimits::max_batch`]): a batch with
//! more members is refused before any member is built. A UTF-8 byte order mark before
//! a body (or, on raw TCP, before a value) is skipped.
#![warn(missing_docs)]

mod exact;
mod id;
mod request;
mod response;
mod split;
mod wire;

pub use id::{Id, IdNumber, NotANumber};
pub use request::{
    parse, parse_for, parse_with, Failed, Incoming, ParseLimits, RawParams, Request, Version,
};
pub use response::{
    parse_response, parse_response_or_notification, write_error, write_error_in, write_error_text,
    write_notification, write_request, write_result, write_result_in, write_result_with,
    write_result_with_in, Response, TEXT_ERROR_CODE,
};
pub use split::{Split, Splitter, Unfinished};
