//! `StompCodec`: the decoder and encoder behind tokio-util's `Decoder` / `Encoder`.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use crate::decode::FrameDecoder;
use crate::encode::{encode_frame, encode_heartbeat};
use crate::{Frame, Item, Limits, StompError};

/// A STOMP 1.2 codec for one connection, for `Framed` / `FramedRead` / `FramedWrite`.
///
/// Decoding yields [`Item`]s and enforces [`Limits`] as bytes arrive. Encoding accepts
/// `&Frame`, `Frame` or `Item` (so a heart-beat is `Item::Heartbeat`).
///
/// Any decode error is final: STOMP cannot resynchronise, so the caller should send
/// [`StompError::error_frame`] and close; later `decode` calls return
/// [`StompError::Poisoned`].
#[derive(Debug)]
pub struct StompCodec {
    limits: Limits,
    decoder: FrameDecoder,
}

impl StompCodec {
    /// A codec enforcing `limits` on every frame it reads.
    pub fn new(limits: Limits) -> StompCodec {
        StompCodec {
            limits,
            decoder: FrameDecoder::new(),
        }
    }

    /// The caps in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// True when no frame is partly decoded (e.g. to tell a clean close from a cut one).
    pub fn is_between_frames(&self) -> bool {
        self.decoder.is_idle()
    }
}

impl Default for StompCodec {
    fn default() -> StompCodec {
        StompCodec::new(Limits::default())
    }
}

impl Decoder for StompCodec {
    type Item = Item;
    type Error = StompError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Item>, StompError> {
        self.decoder.decode(&self.limits, src)
    }

    /// At end of stream, leftover bytes of an unfinished frame are
    /// [`StompError::UnexpectedEof`] (the default would give a generic io error).
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Item>, StompError> {
        match self.decode(src)? {
            Some(item) => Ok(Some(item)),
            None if src.is_empty() && self.decoder.is_idle() => Ok(None),
            None => {
                self.decoder.poison();
                Err(StompError::UnexpectedEof)
            }
        }
    }
}

impl Encoder<&Frame> for StompCodec {
    type Error = StompError;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), StompError> {
        encode_frame(frame, dst)
    }
}

impl Encoder<Frame> for StompCodec {
    type Error = StompError;

    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<(), StompError> {
        encode_frame(&frame, dst)
    }
}

impl Encoder<Item> for StompCodec {
    type Error = StompError;

    fn encode(&mut self, item: Item, dst: &mut BytesMut) -> Result<(), StompError> {
        match item {
            Item::Frame(frame) => encode_frame(&frame, dst),
            Item::Heartbeat => {
                encode_heartbeat(dst);
                Ok(())
            }
        }
    }
}
