//! A WebSocket session as a [`Framer`] for the stream driver: frames in, messages to the
//! subprotocol ([`Messages`]: JSON-RPC or STOMP), its output out as text messages.
//!
//! Control frames are answered here (ping: pong; close: echoed, then the session ends),
//! fragmented messages are put together within `max_message` / `max_fragments`, and
//! keep-alive runs off the driver's tick: a ping after `ping_interval` of silence, the
//! peer dropped (close 1001, its subscriptions with it) after `pong_timeout` more.
//! Once a close frame has gone out nothing else is written (RFC 6455 section 5.5.1).

use crate::config::WsConfig;
use crate::conn::out::Out;
use crate::events::outbox::Delivery;
use crate::events::{Event, Lost};
use crate::stream::driver::{Calls, Close, Framer, MAX_OUT};
use bytes::{Buf, BytesMut};
use rpcmux_websocket::{self as frames, Header};
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
        out: &mut Out,
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
        _out: &mut Out,
        _calls: &mut Calls<Self::Done>,
    ) -> Result<bool, (Option<u16>, Close)> {
        Ok(false)
    }

    fn reply(&mut self, done: Self::Done, out: &mut Out);
    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out);
    fn lost(&mut self, notice: &Lost, out: &mut Out);

    /// The subprotocol's own keep-alive (STOMP heart-beats).
    fn tick(&mut self, _idle_for: Duration, _out: &mut Out) -> Result<(), Close> {
        Ok(())
    }
    fn tick_every(&self) -> Option<Duration> {
        None
    }
}

/// Messages past this size are not checked for UTF-8 here: they are parsed off the
/// async workers, and the JSON parser refuses bad UTF-8 itself (-32700).
const CHECK_UTF8_UP_TO: usize = crate::offload::OFFLOAD_AT;

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
    fn close(&mut self, out: &mut Out, code: u16, why: Close) -> Close {
        if !self.closed {
            frames::put_close(out, code, &why.0);
            self.closed = true;
        }
        why
    }

    /// The subprotocol ended the session (see [`Messages::message`]).
    fn stop(&mut self, out: &mut Out, (code, why): (Option<u16>, Close)) -> Close {
        match code {
            Some(code) => self.close(out, code, why),
            None => {
                self.finish_code = frames::NORMAL;
                why
            }
        }
    }

    fn too_big(&mut self, out: &mut Out, limit: &'static str, why: String) -> Close {
        self.close(out, frames::TOO_BIG, Close::over_limit(limit, why))
    }

    /// Hand a complete message to the subprotocol.
    fn deliver(
        &mut self,
        text: bool,
        payload: BytesMut,
        out: &mut Out,
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
        out: &mut Out,
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
                // Echo the peer's code (RFC 6455 section 5.5.1), 1000 if it gave none; a
                // one-byte body or a code no peer may send is a protocol error, a reason
                // that is not UTF-8 bad data.
                let (code, why) = match payload.len() {
                    0 => (frames::NORMAL, "peer closed the WebSocket"),
                    1 => (frames::PROTOCOL_ERROR, "close frame with a one-byte body"),
                    _ => match u16::from_be_bytes([payload[0], payload[1]]) {
                        _ if std::str::from_utf8(&payload[2..]).is_err() => {
                            (frames::BAD_DATA, "close reason is not UTF-8")
                        }
                        c if valid_close_code(c) => (c, "peer closed the WebSocket"),
                        _ => (frames::PROTOCOL_ERROR, "close code no peer may send"),
                    },
                };
                Err(self.close(out, code, Close::new(why)))
            }
            frames::CONTINUATION => {
                let Some(p) = &mut self.partial else {
                    let why = Close::new("continuation frame outside a fragmented message");
                    return Err(self.close(out, frames::PROTOCOL_ERROR, why));
                };
                p.data.unsplit(payload);
                p.frames += 1;
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
        out: &mut Out,
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
                        // Counted when consumed (in `frame`): a header is judged again
                        // each time more of its payload arrives.
                        let (held, frames) = (p.data.len() as u64, p.frames + 1);
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

    fn held(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| p.data.capacity())
    }

    fn reply(&mut self, done: Self::Done, out: &mut Out) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if !self.closed {
            self.msgs.reply(done, out);
        }
    }

    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out) {
        if !self.closed {
            self.msgs.event(event, how, out);
        }
    }

    fn lost(&mut self, notice: &Lost, out: &mut Out) {
        if !self.closed {
            self.msgs.lost(notice, out);
        }
    }

    fn tick(&mut self, idle_for: Duration, out: &mut Out) -> Result<(), Close> {
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
        if self.in_flight > 0 || out.pending() >= MAX_OUT {
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

    fn finish(&mut self, out: &mut Out) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::budget::Budget;

    /// Records the messages it is handed; starts no calls.
    #[derive(Default)]
    struct Record(Vec<(bool, Vec<u8>)>);

    impl Messages for Record {
        type Done = ();
        fn message(
            &mut self,
            text: bool,
            payload: BytesMut,
            _: &mut Out,
            _: &mut Calls<()>,
        ) -> Result<bool, (Option<u16>, Close)> {
            self.0.push((text, payload.to_vec()));
            Ok(false)
        }
        fn reply(&mut self, _: (), _: &mut Out) {}
        fn event(&mut self, _: &Event, _: &Delivery, _: &mut Out) {}
        fn lost(&mut self, _: &Lost, _: &mut Out) {}
    }

    fn ws() -> Ws<Record> {
        let cfg = WsConfig {
            max_message: 10,
            max_fragments: 3,
            ..WsConfig::default()
        };
        Ws::new(Record::default(), &cfg)
    }

    fn masked(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        frames::put_masked(&mut out, opcode, payload, [9, 8, 7, 6]);
        if !fin {
            out[0] &= 0x7F;
        }
        out.to_vec()
    }

    /// Frames the server wrote: opcode and payload.
    type Sent = Vec<(u8, Vec<u8>)>;

    /// Feed `wire` one byte at a time; the decode result and what went out.
    fn feed(ws: &mut Ws<Record>, wire: &[u8]) -> (Result<(), String>, Sent) {
        let mut calls = Calls::new(Budget::new(1 << 20));
        let (mut input, mut out) = (BytesMut::new(), Out::new(Budget::new(1 << 20)));
        let mut r = Ok(());
        for b in wire {
            input.extend_from_slice(&[*b]);
            if let Err(Close(why, _)) = ws.decode(&mut input, &mut out, &mut calls, 1) {
                r = Err(why);
                break;
            }
        }
        let mut sent = Vec::new();
        while let Ok(Some(h)) = frames::parse_header(&out) {
            let end = h.header_len + h.len as usize;
            sent.push((h.opcode, out[h.header_len..end].to_vec()));
            out.advance(end);
        }
        (r, sent)
    }

    #[test]
    fn fragments_join_around_a_ping_arriving_a_byte_at_a_time() {
        let mut w = ws();
        let mut wire = masked(false, frames::TEXT, b"ab");
        wire.extend(masked(true, frames::PING, b"p"));
        wire.extend(masked(true, frames::CONTINUATION, b"cd"));
        let (r, sent) = feed(&mut w, &wire);
        assert_eq!(r, Ok(()));
        assert_eq!(sent, [(frames::PONG, b"p".to_vec())]);
        assert_eq!(w.msgs.0, [(true, b"abcd".to_vec())]);
    }

    #[test]
    fn limits_and_protocol_errors_close_with_their_codes() {
        let close_code = |wire: Vec<u8>| {
            let (r, sent) = feed(&mut ws(), &wire);
            assert!(r.is_err(), "{sent:?}");
            let (op, body) = sent.last().cloned().unwrap();
            assert_eq!(op, frames::CLOSE);
            u16::from_be_bytes([body[0], body[1]])
        };
        assert_eq!(
            close_code(masked(true, frames::TEXT, &[b' '; 11])),
            frames::TOO_BIG
        );
        let mut four = masked(false, frames::TEXT, b"a");
        for _ in 0..3 {
            four.extend(masked(false, frames::CONTINUATION, b"b"));
        }
        assert_eq!(close_code(four), frames::TOO_BIG, "a fourth fragment");
        let mut nested = masked(false, frames::TEXT, b"a");
        nested.extend(masked(true, frames::TEXT, b"b"));
        assert_eq!(close_code(nested), frames::PROTOCOL_ERROR);
        assert_eq!(
            close_code(masked(true, frames::CONTINUATION, b"x")),
            frames::PROTOCOL_ERROR
        );
        assert_eq!(
            close_code(masked(true, frames::TEXT, b"\xff")),
            frames::BAD_DATA
        );
        assert_eq!(
            close_code(b"\x81\x01a".to_vec()),
            frames::PROTOCOL_ERROR,
            "unmasked"
        );
        assert_eq!(close_code(masked(true, frames::CLOSE, &[3, 0xE8])), 1000);
        assert_eq!(
            close_code(masked(true, frames::CLOSE, &[3])),
            frames::PROTOCOL_ERROR
        );
        assert_eq!(
            close_code(masked(true, frames::CLOSE, &[0x03, 0xED])),
            frames::PROTOCOL_ERROR
        );
        assert_eq!(
            close_code(masked(true, frames::CLOSE, b"\x03\xe8\xff")),
            frames::BAD_DATA
        );
    }

    #[test]
    fn a_binary_message_reaches_the_subprotocol_as_binary() {
        let mut w = ws();
        let (r, _) = feed(&mut w, &masked(true, frames::BINARY, b"\x00\xff"));
        assert_eq!(r, Ok(()));
        assert_eq!(w.msgs.0, [(false, vec![0, 0xff])]);
    }
}
