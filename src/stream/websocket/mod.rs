//! WebSocket on the shared port (RFC 6455): a `GET` with `Upgrade: websocket` on any
//! path, plain or inside TLS, is answered 101 by hyper ([`handshake`]), then the socket
//! leaves hyper (its read-ahead bytes with it); over HTTP/2 an extended CONNECT (RFC
//! 8441) is answered 200 and its stream carries the session (`http/h2.rs`). Either runs
//! on the stream driver
//! (`stream/driver.rs`) like raw-TCP JSON-RPC and STOMP: bounded calls in flight,
//! bounded unsent output, events, idle timeout, graceful shutdown (close 1001).
//!
//! - `frames`: the frame codec (rpcmux-websocket); [`conn`]: control frames, fragments,
//!   limits, ping/pong;
//! - [`json`]: JSON-RPC 2.0 messages; [`stomp`]: STOMP 1.2 frames in messages;
//! - [`crate::config::WsConfig`], [`crate::config::WebConfig`]: the `[websocket]` and `[web]` sections.

pub(crate) mod conn;
/// The frame codec, shared with the client.
pub mod handshake;
mod json;
mod stomp;

pub use handshake::Subprotocol;

use crate::conn::ConnInfo;
use crate::io::{Rewind, Stream};
use crate::shared::Shared;
use crate::stream::driver;
use futures_util::future::Either;
use std::sync::Arc;

/// Run a WebSocket session on an upgraded connection until either side closes it.
///
/// Not an `async fn`, for the reason `driver::serve` is not: an `async fn` keeps its
/// arguments in its future for the session's life beside the driver's own copies, and
/// this future is every idle WebSocket session's memory.
pub(crate) fn serve<S: Stream>(
    io: Rewind<S>,
    info: ConnInfo,
    shared: Arc<Shared>,
    sub: Subprotocol,
) -> impl std::future::Future<Output = ()> {
    let ws = shared.config.websocket.clone();
    match sub {
        Subprotocol::Json => {
            let (verbs, bounds) = (shared.verbs.clone(), shared.json_bounds());
            let protocol = info.http_protocol("jsonrpc-ws", "jsonrpc-ws-h2");
            Either::Left(driver::serve(io, info, shared, protocol, move |ctx| {
                conn::Ws::new(json::JsonWs { verbs, ctx, bounds }, &ws)
            }))
        }
        Subprotocol::Stomp => {
            let (session, for_framer) = (info.session, shared.clone());
            let protocol = info.http_protocol("stomp-ws", "stomp-ws-h2");
            Either::Right(driver::serve(io, info, shared, protocol, move |ctx| {
                conn::Ws::new(stomp::StompWs::new(for_framer, ctx, session), &ws)
            }))
        }
    }
}
