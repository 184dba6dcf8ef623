//! What an operator runs and watches, end to end: `/metrics` and `/ready`, TLS and the
//! PROXY protocol on the shared port, TLS material reloaded on SIGHUP, the README's TLS
//! quick start, and systemd socket activation and notifications.
//!
//! One test binary (each file a module: `tls_reload::some_test`); nextest runs every test
//! in a process of its own. The shared helpers are tests/common.

#[path = "../common/mod.rs"]
mod common;

mod addr_in_use;
mod auth;
mod auth_bypass;
mod auth_http;
mod auth_metrics;
mod auth_token_cli;
mod auth_tokens;
mod metrics;
mod systemd;
mod tls_proxy;
mod tls_quickstart;
mod tls_reload;
mod tls_required_h2;
