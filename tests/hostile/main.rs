//! The hostile end-to-end tests: attacks against the real binary under an address-space
//! limit (amplification, memory held by calls in flight, slow bodies, sniff-permit
//! lockout, starvation, WebSocket abuse), data that must come back exactly, the
//! interoperability details real clients depend on, and shutdown with calls still
//! running. docs/limits.md describes the limits they exercise.
//!
//! One test binary (each file a module: `memory::some_test`); nextest runs every test in
//! a process of its own. Helpers: tests/common, tests/common/hostile.rs above all.

#[path = "../common/mod.rs"]
mod common;

mod amplification;
mod auth_flood;
mod budgets;
mod data;
mod http2;
mod interop;
mod memory;
mod sessions;
mod shutdown;
mod slow;
mod sniff;
mod starvation;
mod websocket;
