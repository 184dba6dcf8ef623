//! The RFC 6455 frame codec, hand-written (why: the crate docs).
//!
//! Payloads are unmasked in place in the caller's input buffer, so a single-frame
//! message reaches its parser without a copy, and a frame's length is judged from its
//! header before any of its payload is buffered.

use bytes::{BufMut, BytesMut};

// Opcodes (RFC 6455 section 5.2).
/// Opcode: a continuation of a fragmented message.
pub const CONTINUATION: u8 = 0x0;
/// Opcode: a text message (UTF-8), or its first fragment.
pub const TEXT: u8 = 0x1;
/// Opcode: a binary message, or its first fragment.
pub const BINARY: u8 = 0x2;
/// Opcode: close (a control frame; its payload is a close code and a reason).
pub const CLOSE: u8 = 0x8;
/// Opcode: ping (a control frame, answered by a pong with the same payload).
pub const PING: u8 = 0x9;
/// Opcode: pong (a control frame).
pub const PONG: u8 = 0xA;

// Close codes (RFC 6455 section 7.4.1).
/// Close code 1000: normal closure.
pub const NORMAL: u16 = 1000;
/// Close code 1001: going away (a server shutting down).
pub const GOING_AWAY: u16 = 1001;
/// Close code 1002: protocol error.
pub const PROTOCOL_ERROR: u16 = 1002;
/// Close code 1007: data inconsistent with the message's type (text that is not UTF-8).
pub const BAD_DATA: u16 = 1007;
/// Close code 1009: a message too big to process.
pub const TOO_BIG: u16 = 1009;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The final fragment of its message.
    pub fin: bool,
    /// What the frame carries ([`TEXT`], [`CLOSE`], ...).
    pub opcode: u8,
    /// The masking key, if the frame is masked.
    pub mask: Option<[u8; 4]>,
    /// Payload length as the header declares it (up to 2^63 - 1).
    pub len: u64,
    /// Bytes of header before the payload.
    pub header_len: usize,
}

impl Header {
    /// A control frame (close, ping, pong): at most 125 bytes, never fragmented.
    pub fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

/// Parse the header at the start of `buf`: `Ok(None)` while it is incomplete, `Err` for
/// a frame no peer may send (reserved bits or opcodes, an oversize or fragmented control
/// frame, a length with the top bit set).
pub fn parse_header(buf: &[u8]) -> Result<Option<Header>, &'static str> {
    let [b0, b1, ..] = *buf else { return Ok(None) };
    if b0 & 0x70 != 0 {
        return Err("reserved bits set (no extension was negotiated)");
    }
    let opcode = b0 & 0x0F;
    let fin = b0 & 0x80 != 0;
    match opcode {
        CONTINUATION | TEXT | BINARY => {}
        CLOSE | PING | PONG if !fin => return Err("fragmented control frame"),
        CLOSE | PING | PONG => {}
        _ => return Err("reserved opcode"),
    }
    let masked = b1 & 0x80 != 0;
    let (len, mut at) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (u16::from_be_bytes([b[0], b[1]]) as u64, 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            Some(b) => (u64::from_be_bytes(b.try_into().expect("8 bytes")), 10),
            None => return Ok(None),
        },
        n => (n as u64, 2),
    };
    if len >> 63 != 0 {
        return Err("payload length with the top bit set");
    }
    if opcode & 0x8 != 0 && len > 125 {
        return Err("control frame longer than 125 bytes");
    }
    let mask = if masked {
        let Some(m) = buf.get(at..at + 4) else {
            return Ok(None);
        };
        at += 4;
        Some([m[0], m[1], m[2], m[3]])
    } else {
        None
    };
    Ok(Some(Header {
        fin,
        opcode,
        mask,
        len,
        header_len: at,
    }))
}

/// XOR `data` with `mask`, eight bytes at a time.
pub fn unmask(data: &mut [u8], mask: [u8; 4]) {
    let m = [mask[0], mask[1], mask[2], mask[3]];
    let wide = u64::from_ne_bytes([m[0], m[1], m[2], m[3], m[0], m[1], m[2], m[3]]);
    let mut chunks = data.chunks_exact_mut(8);
    for c in &mut chunks {
        let v = u64::from_ne_bytes((&*c).try_into().expect("8 bytes")) ^ wide;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    // The remainder starts at a multiple of 8, so at mask index 0.
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= m[i & 3];
    }
}

/// Write a final frame's header: unmasked (`mask: None`, the server's frames) or masked.
pub fn put_header(out: &mut BytesMut, opcode: u8, len: usize, mask: Option<[u8; 4]>) {
    let m = if mask.is_some() { 0x80 } else { 0 };
    out.reserve(14);
    out.put_u8(0x80 | opcode);
    if len < 126 {
        out.put_u8(m | len as u8);
    } else if len <= u16::MAX as usize {
        out.put_u8(m | 126);
        out.put_u16(len as u16);
    } else {
        out.put_u8(m | 127);
        out.put_u64(len as u64);
    }
    if let Some(k) = mask {
        out.put_slice(&k);
    }
}

/// Write one final, unmasked frame.
pub fn put_frame(out: &mut BytesMut, opcode: u8, payload: &[u8]) {
    out.reserve(14 + payload.len());
    put_header(out, opcode, payload.len(), None);
    out.put_slice(payload);
}

/// Write one final frame masked with `mask` (the client's frames).
pub fn put_masked(out: &mut BytesMut, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.reserve(14 + payload.len());
    put_header(out, opcode, payload.len(), Some(mask));
    let start = out.len();
    out.put_slice(payload);
    unmask(&mut out[start..], mask);
}

/// Write a close frame with `code` and a reason (cut to fit the 125-byte control limit).
pub fn put_close(out: &mut BytesMut, code: u16, reason: &str) {
    let mut cut = reason.len().min(123);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut payload = Vec::with_capacity(2 + cut);
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(&reason.as_bytes()[..cut]);
    put_frame(out, CLOSE, &payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_at_every_length_form() {
        for len in [0usize, 125, 126, 65_535, 65_536] {
            let mut out = BytesMut::new();
            let payload = vec![7u8; len];
            put_masked(&mut out, TEXT, &payload, [1, 2, 3, 4]);
            let h = parse_header(&out).unwrap().unwrap();
            assert_eq!((h.fin, h.opcode, h.len), (true, TEXT, len as u64));
            assert_eq!(h.mask, Some([1, 2, 3, 4]));
            let mut body = out[h.header_len..].to_vec();
            unmask(&mut body, [1, 2, 3, 4]);
            assert_eq!(body, payload);
            // Every strict prefix of the header is incomplete, not an error.
            for cut in 0..h.header_len {
                assert_eq!(parse_header(&out[..cut]), Ok(None));
            }
        }
    }

    #[test]
    fn refuses_what_no_peer_may_send() {
        assert!(parse_header(&[0xC1, 0x80]).is_err(), "rsv1");
        assert!(parse_header(&[0x83, 0x80]).is_err(), "opcode 3");
        assert!(parse_header(&[0x09, 0x80]).is_err(), "fragmented ping");
        assert!(parse_header(&[0x89, 0xFE, 0, 200]).is_err(), "long ping");
        let mut huge = vec![0x81, 0xFF];
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert!(parse_header(&huge).is_err(), "top bit");
        // A 1 GiB frame is a valid header: its length is for the caller to judge.
        let mut gib = vec![0x81, 0xFF];
        gib.extend_from_slice(&(1u64 << 30).to_be_bytes());
        gib.extend_from_slice(&[0; 4]);
        assert_eq!(parse_header(&gib).unwrap().unwrap().len, 1 << 30);
    }

    #[test]
    fn unmask_matches_the_bytewise_rule_at_odd_lengths() {
        let mask = [0xA5, 0x11, 0x00, 0xFF];
        for len in 0..40 {
            let data: Vec<u8> = (0..len as u8).collect();
            let mut fast = data.clone();
            unmask(&mut fast, mask);
            let slow: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn close_reason_is_cut_on_a_char_boundary() {
        let mut out = BytesMut::new();
        put_close(&mut out, TOO_BIG, &"é".repeat(100));
        let h = parse_header(&out).unwrap().unwrap();
        assert!(h.len <= 125);
        assert!(std::str::from_utf8(&out[h.header_len + 2..]).is_ok());
    }
}
