//! JSON-RPC over STOMP 1.2, compatible with VDSM's engine clients, with server events.
//!
//! A client CONNECTs (1.2 only), SUBSCRIBEs to its reply destination (default
//! `jms.topic.vdsm_responses`) and to the event destination if it wants events
//! (`jms.queue.events`), then SENDs JSON-RPC requests or batches to a request
//! destination (`jms.topic.vdsm_requests`, `jms.topic.vdsm_irs_requests`). Each reply
//! comes back as a MESSAGE to the request's `reply-to` destination, on the same
//! connection only. Behaviour and decisions: `docs/stomp.md`.
//!
//! - [`framer`]: the session rules (a [`Framer`](crate::stream::driver::Framer)),
//!   with calls, replies and events in `framer/rpc.rs`;
//! - [`subscriptions`]: per-connection subscriptions and `.`-hierarchical matching;
//! - [`heartbeat`]: negotiation with a 1000 ms floor, sending, dead-peer detection;
//! - [`frames`]: the frames the server writes;
//! - [`crate::config::StompConfig`]: the `[stomp]` config section.

mod framer;
mod frames;
mod heartbeat;
mod subscriptions;

/// The session, for STOMP over WebSocket (`stream/websocket/stomp.rs`).
pub(crate) use framer::Stomp;

use crate::conn::ConnInfo;
use crate::io::{Rewind, Stream};
use crate::shared::Shared;
use crate::stream::driver;
/// The sniffer probe: any STOMP client command, after optional heart-beat EOLs
/// (rpcmux-sniff's).
pub use rpcmux_sniff::stomp as probe;
use std::sync::Arc;

/// Run a STOMP session on a sniffed connection until either side closes it.
/// Not an `async fn`: its arguments would stay in every connection's future beside the
/// driver's (see [`driver::serve`]).
pub(crate) fn serve<S: Stream>(
    io: Rewind<S>,
    info: ConnInfo,
    shared: Arc<Shared>,
) -> impl std::future::Future<Output = ()> {
    let (session, for_framer) = (info.session, shared.clone());
    driver::serve(io, info, shared, "stomp", move |ctx| {
        framer::Stomp::new(for_framer, ctx, session)
    })
}
