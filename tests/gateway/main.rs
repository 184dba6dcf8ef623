//! The gateway (docs/gateway.md) against real upstream servers: Python's
//! SimpleXMLRPCServer, other rpcmux instances, msgpack-rpc-python, jsonrpclib-pelix,
//! jsonrpsee and supervisord, over TCP and Unix-domain sockets; multicall batching, and
//! learning the upstreams again while serving.
//!
//! One test binary (each file a module: `refresh::some_test`); nextest runs every test in
//! a process of its own. Helpers: tests/common, and support.rs here (the upstreams).

#[path = "../common/mod.rs"]
mod common;
mod support;

mod credentials;
mod discovery_flags;
mod go_upstream;
mod multicall;
mod peers;
mod refresh;
mod supervisord;
mod unix_sockets;
mod upstreams;
