//! The web side of the shared port: WebSocket end to end (Python's `websockets`,
//! jsonrpsee's client, stompjs over Node's `ws`, raw frames) and the console page in a
//! headless chromium, with and without `--auth` (auth.rs); stompjs and the console
//! resuming their events after a cut (events_resume.rs).
//!
//! One test binary (each file a module: `websocket::some_test`); nextest runs every test
//! in a process of its own. The shared helpers are tests/common.

#[path = "../common/mod.rs"]
mod common;

mod auth;
mod console_h2;
mod events_resume;
mod websocket;
