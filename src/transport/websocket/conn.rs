//! A WebSocket session as a [`Framer`] for the stream driver: frames in, messages to the
//! subprotocol ([`Messages`]: JSON-RPC or STOMP), its output out as text messages.
//!
//! Control frames are answered here (ping: pong; close: echoed, then the session ends),
//! fragmented messages are put together within `max_message` / `max_fragments`, and
//! keep-alive runs off the driver's tick: a ping after `ping_interval` of silence, the
//! peer dropped (close 1001, its subscriptions with it) after `pong_timeout` more.
//! Once a close frame has gone out nothing else is written (RFC 6455 section 5.5.1).

use super::config::WsConfig;
use super::frames::{self, Header};
use crate::events::Event;
use crate::transport::session::{Calls, Close, Framer, MAX_OUT};
use bytes::{Buf, BytesMut};
use std::time::Duration;

/// A subprotocol carried in messages.
pub(crate) trait Messages: Send {
    type Done: Send + 'static;

    /// A complete message (`text`: opcode text, already checked to be UTF-8 when
    /// small). Writes any immediate answer as messages into `out`; true if it started a
    /// call. `Err` ends the session: at once with close `code`, or with `None` once the
    /// calls in flight have answered (close 1000).
    fn message(
        &mut self,
        text: bool,
        payload: BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<Self::Done>,
    ) -> Result<bool, (Option<u16>, Close)>;

    /// Input the subprotocol holds that may yield more work without a new message (a
    /// message that carried several STOMP frames).
    fn has_pending(&self) -> bool {
        false
    }

    /// Work through that input (see [`Messages::has_pending`]).
    fn pending(
        &mut self,
        _out: &mut BytesMut,
        _calls: &mut Calls<Self::Done>,
    ) -> Result<bool, (Option<u16>, Close)> {
        Ok(false)
    }

    fn reply(&mut self, done: Self::Done, out: &mut BytesMut);
    fn event(&mut self, event: &Event, out: &mut BytesMut);

    /// The subprotocol's own keep-alive (STOMP heart-beats).
    fn tick(&mut self, _idle_for: Duration, _out: &mut BytesMut) -> Result<(), Close> {
        Ok(())
    }
    fn tick_every(&self) -> Option<Duration> {
        None
    }
}

/// Messages past this size are not checked for UTF-8 here: they are parsed off the
/// async workers, and the JSON parser refuses bad UTF-8 itself (-32700).
const CHECK_UTF8_UP_TO: usize = crate::heavy::OFFLOAD_AT;

/// A message being put together from fragments.
struct Partial {
    text: bool,
    data: BytesMut,
    frames: usize,
}

pub(crate) struct Ws<M> {
    msgs: M,
    max_message: usize,
    max_frame: usize,
    max_fragments: usize,
    ping_interval: Duration,
    pong_timeout: Duration,
    partial: Option<Partial>,
    /// A close frame has been written: nothing more goes out.
    closed: bool,
    /// The close code [`Framer::finish`] sends.
    finish_code: u16,
    /// When a ping went out that the peer has not answered (spoken since).
    pinged: Option<tokio::time::Instant>,
    /// Calls started and not yet answered.
    in_flight: usize,
}

impl<M: Messages> Ws<M> {
    pub(crate) fn new(msgs: M, cfg: &WsConfig) -> Self {
        Ws {
            msgs,
            max_message: cfg.max_message,
            max_frame: cfg.max_frame,
            max_fragments: cfg.max_fragments.max(1),
            ping_interval: cfg.ping_interval(),
            pong_timeout: cfg.pong_timeout(),
            partial: None,
            closed: false,
            finish_code: frames::GOING_AWAY,
            pinged: None,
            in_flight: 0,
        }
    }

    /// Send close `code` (once) and end the session.
    fn close(&mut self, out: &mut BytesMut, code: u16, why: Close) -> Close {
        if !self.closed {
            frames::put_close(out, code, &why.0);
            self.closed = true;
        }
        why
    }

    /// The subprotocol ended the session (see [`Messages::message`]).
    fn stop(&mut self, out: &mut BytesMut, (code, why): (Option<u16>, Close)) -> Close {
        match code {
            Some(code) => self.close(out, code, why),
            None => {
                self.finish_code = frames::NORMAL;
                why
            }
        }
    }

    fn too_big(&mut self, out: &mut BytesMut, limit: &'static str, why: String) -> Close {
        self.close(out, frames::TOO_BIG, Close::over_limit(limit, why))
    }

    /// Hand a complete message to the subprotocol.
    fn deliver(
        &mut self,
        text: bool,
        payload: BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<M::Done>,
    ) -> Result<bool, Close> {
        if text && payload.len() <= CHECK_UTF8_UP_TO && std::str::from_utf8(&payload).is_err() {
            let why = Close::new("text message is not UTF-8");
            return Err(self.close(out, frames::BAD_DATA, why));
        }
        self.msgs
            .message(text, payload, out, calls)
            .map_err(|stop| self.stop(out, stop))
    }

    /// One frame whose header is `h`, payload complete in `input`.
    fn frame(
        &mut self,
        h: Header,
        input: &mut BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<M::Done>,
    ) -> Result<bool, Close> {
        let mut payload = input.split_to(h.header_len + h.len as usize);
        payload.advance(h.header_len);
        if let Some(mask) = h.mask {
            frames::unmask(&mut payload, mask);
        }
        match h.opcode {
            frames::PING => {
                frames::put_frame(out, frames::PONG, &payload);
                Ok(false)
            }
            frames::PONG => Ok(false),
            frames::CLOSE => {
                // Echo the peer's code (RFC 6455 section 5.5.1), 1000 if it gave none.
                let code = match payload.get(..2) {
                    Some(c) => u16::from_be_bytes([c[0], c[1]]),
                    None => frames::NORMAL,
                };
                let code = if valid_close_code(code) {
                    code
                } else {
                    frames::PROTOCOL_ERROR
                };
                Err(self.close(out, code, Close::new("peer closed the WebSocket")))
            }
            frames::CONTINUATION => {
                let Some(p) = &mut self.partial else {
                    let why = Close::new("continuation frame outside a fragmented message");
                    return Err(self.close(out, frames::PROTOCOL_ERROR, why));
                };
                p.data.unsplit(payload);
                if !h.fin {
                    return Ok(false);
                }
                let p = self.partial.take().expect("partial message");
                self.deliver(p.text, p.data, out, calls)
            }
            op => {
                let text = op == frames::TEXT;
                if h.fin {
                    self.deliver(text, payload, out, calls)
                } else {
                    self.partial = Some(Partial {
                        text,
                        data: payload,
                        frames: 1,
                    });
                    Ok(false)
                }
            }
        }
    }
}

/// Codes a peer may send in a close frame (RFC 6455 section 7.4).
fn valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999)
}

impl<M: Messages> Framer for Ws<M> {
    type Done = M::Done;

    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<Self::Done>,
        mut room: usize,
    ) -> Result<(), Close> {
        if self.closed {
            input.clear();
            return Err(Close::new("WebSocket closed"));
        }
        if self.msgs.has_pending() {
            let started = self
                .msgs
                .pending(out, calls)
                .map_err(|stop| self.stop(out, stop))?;
            self.in_flight += usize::from(started);
            room -= usize::from(started).min(room);
        }
        while room > 0 && !self.msgs.has_pending() {
            let h = match frames::parse_header(input) {
                Ok(Some(h)) => h,
                Ok(None) => return Ok(()),
                Err(why) => {
                    input.clear();
                    let why = Close::new(format!("WebSocket protocol error: {why}"));
                    return Err(self.close(out, frames::PROTOCOL_ERROR, why));
                }
            };
            if h.mask.is_none() {
                input.clear();
                let why = Close::new("WebSocket protocol error: unmasked client frame");
                return Err(self.close(out, frames::PROTOCOL_ERROR, why));
            }
            // Judged from the header alone: nothing of an oversize frame is buffered.
            if h.len > self.max_frame as u64 {
                input.clear();
                let why = format!("frame of {} bytes, over {}", h.len, self.max_frame);
                return Err(self.too_big(out, "ws_frame", why));
            }
            if !h.is_control() {
                match (&mut self.partial, h.opcode) {
                    (Some(_), frames::TEXT | frames::BINARY) => {
                        input.clear();
                        let why = Close::new("new message inside a fragmented one");
                        return Err(self.close(out, frames::PROTOCOL_ERROR, why));
                    }
                    (Some(p), _) => {
                        p.frames += 1;
                        let (held, frames) = (p.data.len() as u64, p.frames);
                        if frames > self.max_fragments {
                            input.clear();
                            let why = format!("message in over {} frames", self.max_fragments);
                            return Err(self.too_big(out, "ws_fragments", why));
                        }
                        if held + h.len > self.max_message as u64 {
                            input.clear();
                            let why = format!("message over {} bytes", self.max_message);
                            return Err(self.too_big(out, "ws_message", why));
                        }
                    }
                    (None, _) if h.len > self.max_message as u64 => {
                        input.clear();
                        let why = format!("message over {} bytes", self.max_message);
                        return Err(self.too_big(out, "ws_message", why));
                    }
                    (None, _) => {}
                }
            }
            if input.len() < h.header_len + h.len as usize {
                // Nothing reserved for the rest: the buffer grows as bytes arrive, so a
                // header announcing 16 MiB that is never followed costs nothing.
                return Ok(());
            }
            if self.frame(h, input, out, calls)? {
                self.in_flight += 1;
                room -= 1;
            }
        }
        Ok(())
    }

    fn reply(&mut self, done: Self::Done, out: &mut BytesMut) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if !self.closed {
            self.msgs.reply(done, out);
        }
    }

    fn event(&mut self, event: &Event, out: &mut BytesMut) {
        if !self.closed {
            self.msgs.event(event, out);
        }
    }

    fn tick(&mut self, idle_for: Duration, out: &mut BytesMut) -> Result<(), Close> {
        if self.closed {
            return Ok(());
        }
        let now = tokio::time::Instant::now();
        if idle_for < self.ping_interval {
            // The peer spoke since the last ping.
            self.pinged = None;
        } else if self.pinged.is_none() {
            frames::put_frame(out, frames::PING, b"");
            self.pinged = Some(now);
        }
        // While calls run or output waits, the driver may not be reading (its caps): the
        // peer's pong may wait unread in the socket, so its silence proves nothing. The
        // timeout then counts from when the driver could read again.
        if self.in_flight > 0 || out.len() >= MAX_OUT {
            if let Some(at) = &mut self.pinged {
                *at = now;
            }
        }
        let dead = self
            .pinged
            .is_some_and(|at| now.duration_since(at) >= self.pong_timeout);
        if dead && idle_for >= self.ping_interval + self.pong_timeout {
            let why = Close::new("peer did not answer the ping; dropped");
            return Err(self.close(out, frames::GOING_AWAY, why));
        }
        self.msgs.tick(idle_for, out)
    }

    fn tick_every(&self) -> Option<Duration> {
        let own = (self.ping_interval.min(self.pong_timeout) / 2).max(Duration::from_millis(10));
        Some(self.msgs.tick_every().map_or(own, |t| t.min(own)))
    }

    fn has_pending(&self) -> bool {
        !self.closed && self.msgs.has_pending()
    }

    fn finish(&mut self, out: &mut BytesMut) {
        if !self.closed {
            let why = if self.finish_code == frames::NORMAL {
                "session ended"
            } else {
                "server going away"
            };
            frames::put_close(out, self.finish_code, why);
            self.closed = true;
        }
    }
}
