//! Several rpcmux instances working together (docs/fleet.md): two behind a real HAProxy
//! (and one on a Unix socket behind it)
//! draining without a failed call, and events fanned out across instances through a real
//! redis-server.
//!
//! One test binary (each file a module: `haproxy::some_test`); nextest runs every test in
//! a process of its own. The shared helpers are tests/common.

#[path = "../common/mod.rs"]
mod common;

mod events_redis;
mod haproxy;
mod haproxy_identity;
mod haproxy_unix;
