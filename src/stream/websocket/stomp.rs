//! STOMP 1.2 over WebSocket (subprotocols `v12.stomp`, `v11.stomp`): the STOMP session
//! of raw TCP (`stream/stomp/`) with its frames carried in messages, the convention
//! of stompjs. Messages are taken as a byte stream (stompjs sends one frame per
//! message, but a frame may span messages and a message hold several, or a heart-beat
//! EOL); what the session writes in one step goes out as one text message.

use crate::conn::out::Out;
use crate::events::outbox::Delivery;
use crate::events::{Event, Lost};
use crate::shared::Shared;
use crate::stream::driver::{Calls, Close, Framer};
use crate::stream::stomp::Stomp;
use crate::stream::websocket::conn::Messages;
use crate::verbs::CallContext;
use bytes::BytesMut;
use rpcmux_websocket as frames;
use std::sync::Arc;
use std::time::Duration;

type Done = <Stomp as Framer>::Done;

pub(crate) struct StompWs {
    inner: Stomp,
    /// Message payloads not yet decoded into frames.
    stream: BytesMut,
    /// What the session wrote in one step, before it is framed as a message.
    scratch: Out,
    /// The last decode stopped at its room with input left: more frames may be ready.
    more: bool,
}

/// A scratch buffer bigger than this is given back after use (a big reply passed).
const KEEP_SCRATCH: usize = 4096;

impl StompWs {
    pub(crate) fn new(shared: Arc<Shared>, ctx: CallContext, conn_id: u64) -> Self {
        let scratch = Out::new(shared.out_budget.clone());
        StompWs {
            inner: Stomp::new(shared, ctx, conn_id),
            stream: BytesMut::new(),
            scratch,
            more: false,
        }
    }

    /// Frame what the session wrote as one text message.
    fn flush(&mut self, out: &mut Out) {
        if !self.scratch.is_done() {
            frames::put_header(out, frames::TEXT, self.scratch.pending(), None);
            out.append(&mut self.scratch);
        }
        if self.scratch.capacity() > KEEP_SCRATCH {
            self.scratch.release();
        }
    }
}

impl Messages for StompWs {
    type Done = Done;

    fn message(
        &mut self,
        _text: bool,
        payload: BytesMut,
        out: &mut Out,
        calls: &mut Calls<Done>,
    ) -> Result<bool, (Option<u16>, Close)> {
        if self.stream.is_empty() {
            self.stream = payload;
        } else {
            self.stream.extend_from_slice(&payload);
        }
        self.pending(out, calls)
    }

    fn has_pending(&self) -> bool {
        self.more
    }

    fn pending(
        &mut self,
        out: &mut Out,
        calls: &mut Calls<Done>,
    ) -> Result<bool, (Option<u16>, Close)> {
        let before = calls.len();
        let r = self
            .inner
            .decode(&mut self.stream, &mut self.scratch, calls, 1);
        self.flush(out);
        let started = calls.len() > before;
        self.more = started && !self.stream.is_empty();
        if self.stream.is_empty() && self.stream.capacity() > KEEP_SCRATCH {
            self.stream = BytesMut::new();
        }
        // A STOMP fault has written its ERROR frame: the close (1000) follows once the
        // calls in flight have answered, as on raw TCP.
        r.map(|()| started).map_err(|why| (None, why))
    }

    fn reply(&mut self, done: Done, out: &mut Out) {
        self.inner.reply(done, &mut self.scratch);
        self.flush(out);
        // Frames that waited for a login's verdict (or the close a refused one owes)
        // are worked through now.
        self.more |= !self.stream.is_empty() || self.inner.has_pending();
    }

    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out) {
        self.inner.event(event, how, &mut self.scratch);
        self.flush(out);
    }

    fn lost(&mut self, notice: &Lost, out: &mut Out) {
        self.inner.lost(notice, &mut self.scratch);
        self.flush(out);
    }

    fn tick(&mut self, idle_for: Duration, out: &mut Out) -> Result<(), Close> {
        let r = self.inner.tick(idle_for, &mut self.scratch);
        self.flush(out);
        r
    }

    fn tick_every(&self) -> Option<Duration> {
        self.inner.tick_every()
    }
}
