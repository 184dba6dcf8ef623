//! End-to-end tests of the protocols and the server's front door: each protocol against
//! real clients and raw bytes, typed verbs, rpcmux embedded as a library, connection
//! handling, the config file and its reference, `rpcmux serve` startup, `rpcmux call`,
//! `watch` and `bench`, the OpenRPC generator; and the fuzzer's findings in the protocol crates,
//! replayed (fuzz_regressions.rs).
//!
//! One test binary for all of them (linking the crate once, not once per file); each file
//! is a module, so a test is named `xmlrpc::some_test`. nextest still runs every test in
//! a process of its own. The shared helpers are tests/common.

#[path = "../common/mod.rs"]
mod common;

mod cli_auth;
mod cli_call_bench;
mod config_file;
mod connections;
mod embed;
mod events_resume;
mod fuzz_regressions;
mod go_jsonrpc;
mod http2;
mod jsonrpc_http;
mod jsonrpc_tcp;
mod msgpack;
mod openrpc_generator;
mod serve_startup;
mod stomp;
mod typed_verbs;
mod unix_socket;
mod watch;
mod watch_restart;
mod xmlrpc;
