//! Protocol detection from a connection's first bytes, for a server that speaks several
//! protocols on one port: pure functions on bytes, no I/O.
//!
//! Every probe answers [`Probe::Match`], [`Probe::NoMatch`] or [`Probe::NeedMore`] on the
//! bytes seen so far, so the decision is made as soon as the bytes are unambiguous (one
//! byte for JSON or msgpack-rpc) and a client that sends one byte at a time still works:
//! ask again after every read, keep the bytes, and replay them to the protocol's parser.
//! Probes are monotone: once a prefix answers `Match` or `NoMatch`, every longer prefix
//! answers the same.
//!
//! - Application protocols: [`http`] (HTTP/1.x request line, and the HTTP/2 preface's
//!   first line), [`http2`] (the whole HTTP/2 connection preface), [`json`] (JSON-RPC over raw
//!   TCP), [`msgpack_rpc`] (MessagePack-RPC), [`stomp`] (a STOMP client frame).
//! - Front layers, sniffed again behind: [`tls`] (a TLS ClientHello), [`proxy`] (a PROXY
//!   protocol v1 or v2 header), and [`proxy_header`], which parses that header and says
//!   how many bytes it takes.
//!
//! Order matters only where two probes could both match the same bytes: a PROXY v1
//! header (`PROXY `) also looks like an HTTP request line, so [`proxy`] must be asked
//! before [`http`].
//!
//! ```
//! use rpcmux_sniff::{http, json, proxy, Probe, ProbeFn};
//!
//! let table: [(&str, ProbeFn); 3] = [("proxy", proxy), ("http", http), ("json", json)];
//! let first_match = |bytes: &[u8]| {
//!     table.iter().find(|(_, probe)| probe(bytes) == Probe::Match).map(|(name, _)| *name)
//! };
//! assert_eq!(first_match(b"POST /RPC2 HTTP/1.1\r\n"), Some("http"));
//! assert_eq!(first_match(b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\n"), Some("proxy"));
//! assert_eq!(first_match(b" {"), Some("json"));
//! assert_eq!(http(b"POS"), Probe::NeedMore);
//! ```
#![warn(missing_docs)]

mod front;
mod probes;
pub mod proxy_header;
mod verdict;

pub use front::{proxy, tls};
pub use probes::{http, http2, json, msgpack_rpc, stomp, HTTP2_PREFACE};
pub use verdict::{Probe, ProbeFn};
