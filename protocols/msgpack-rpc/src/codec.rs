//! The tokio-util codec: framed msgpack-rpc over a byte stream.

use crate::error::CodecError;
use crate::limits::Limits;
use crate::message::{parse_message, Message};
use crate::scan::{Scan, Scanner};
use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Most extra capacity one `decode` call asks the read buffer to reserve. The scanner
/// often knows a message needs megabytes more (a big str header); reserving all of it at
/// once would let a peer make us allocate `max_message` per connection for the price of a
/// header, so growth beyond this follows the bytes actually received.
const MAX_RESERVE: usize = 64 * 1024;

/// Incremental msgpack-rpc codec. Decoding keeps scan state between calls: a message that
/// arrives in many small reads is walked once and parsed once, and caps are enforced before
/// it is complete. Between `decode` calls the buffer may only grow at its end (as
/// `FramedRead` does).
///
/// Decode errors are fatal for the stream (log and close); a framed but unusable request
/// comes out as [`Message::Invalid`] instead, to be answered.
#[derive(Debug, Default)]
pub struct MsgpackRpcCodec {
    limits: Limits,
    scanner: Scanner,
}

impl MsgpackRpcCodec {
    /// A codec enforcing `limits` on every message it reads.
    pub fn new(limits: Limits) -> Self {
        MsgpackRpcCodec {
            limits,
            scanner: Scanner::default(),
        }
    }

    /// The caps in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether no message is part-way through framing: the next byte of the input starts
    /// one. A caller may then read a message straight from the input (a typed verb's
    /// reader finds where it ends as it goes) and only frame it when that fails.
    pub fn is_idle(&self) -> bool {
        !self.scanner.is_active()
    }

    /// The length of the whole message at the front of `src`, once it has arrived
    /// (scanned, so framing and caps hold), leaving `src` as it is: the caller reads
    /// `&src[..len]` in place (see [`crate::split_call`]) and then advances past it.
    pub fn frame_len(&mut self, src: &mut BytesMut) -> Result<Option<usize>, CodecError> {
        match self.scanner.scan(src, &self.limits) {
            Ok(Scan::Incomplete { need }) => {
                src.reserve(need.min(MAX_RESERVE));
                Ok(None)
            }
            Ok(Scan::Complete(len)) => Ok(Some(len)),
            Err(e) => {
                self.scanner.reset();
                Err(e)
            }
        }
    }

    /// Like [`Decoder::decode`], but a message of at least `raw_from` bytes comes out
    /// framed and unparsed, for the caller to parse elsewhere (a server parses big
    /// messages off its async workers) with [`crate::parse_framed`].
    pub fn decode_or_frame(
        &mut self,
        src: &mut BytesMut,
        raw_from: usize,
    ) -> Result<Option<Framed>, CodecError> {
        match self.scanner.scan(src, &self.limits) {
            Ok(Scan::Incomplete { need }) => {
                src.reserve(need.min(MAX_RESERVE));
                Ok(None)
            }
            Ok(Scan::Complete(len)) if len >= raw_from => Ok(Some(Framed::Raw(src.split_to(len)))),
            Ok(Scan::Complete(len)) => {
                let msg = parse_message(&src[..len]);
                src.advance(len);
                msg.map(|m| Some(Framed::Message(m)))
            }
            Err(e) => {
                self.scanner.reset();
                Err(e)
            }
        }
    }
}

/// What [`MsgpackRpcCodec::decode_or_frame`] yields.
#[derive(Debug)]
pub enum Framed {
    /// A message small enough to parse in place.
    Message(Message),
    /// One whole message's bytes (scanned, so framing and caps already hold), unparsed.
    Raw(BytesMut),
}

/// Parse one message that [`MsgpackRpcCodec::decode_or_frame`] framed.
pub fn parse_framed(frame: &[u8]) -> Result<Message, CodecError> {
    parse_message(frame)
}

impl Decoder for MsgpackRpcCodec {
    type Item = Message;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Message>, CodecError> {
        match self.scanner.scan(src, &self.limits) {
            Ok(Scan::Incomplete { need }) => {
                src.reserve(need.min(MAX_RESERVE));
                Ok(None)
            }
            Ok(Scan::Complete(len)) => {
                let msg = parse_message(&src[..len]);
                src.advance(len);
                msg.map(Some)
            }
            Err(e) => {
                self.scanner.reset();
                Err(e)
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Message>, CodecError> {
        match self.decode(src)? {
            Some(msg) => Ok(Some(msg)),
            None if src.is_empty() => Ok(None),
            None => {
                let buffered = src.len();
                src.clear();
                self.scanner.reset();
                Err(CodecError::Truncated { buffered })
            }
        }
    }
}

impl Encoder<&Message> for MsgpackRpcCodec {
    type Error = CodecError;

    fn encode(&mut self, msg: &Message, dst: &mut BytesMut) -> Result<(), CodecError> {
        msg.encode(dst).map_err(CodecError::from)
    }
}

impl Encoder<Message> for MsgpackRpcCodec {
    type Error = CodecError;

    fn encode(&mut self, msg: Message, dst: &mut BytesMut) -> Result<(), CodecError> {
        msg.encode(dst).map_err(CodecError::from)
    }
}
