//! Incremental framing: find where a message ends without parsing it.
//!
//! msgpack has no length prefix for a whole message, so the only way to know that a message
//! is complete is to walk its items. Parsing it into values on every read and throwing the
//! work away when it turns out incomplete would cost O(n²) for a message that arrives in
//! many small reads. Instead the [`Scanner`] walks item *headers* only, and keeps where it
//! got to between calls: the offset of the first item it has not consumed, and a stack of
//! "items still to read" for each open container. Each call resumes there, consumes only
//! items that are complete in the buffer (a string or binary is consumed once all its bytes
//! are in), and reports `Complete(len)` when the outermost array is closed. The message is
//! then parsed exactly once.
//!
//! The caps are checked as it goes, on declared lengths, not on bytes received: a str32
//! header announcing 100 MB is refused as soon as its 5 header bytes are in. Each item takes
//! at least one byte, so the sum of the "still to read" counts is a lower bound of the bytes
//! still to come, which refuses `array32(4e9)` at once too.

use crate::error::CodecError;
use crate::limits::Limits;
use rmp::Marker;

/// What the scanner found in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// A whole message occupies the first `len` bytes.
    Complete(usize),
    /// The message is not complete; at least `need` more bytes are required.
    Incomplete { need: usize },
}

/// Scan state of the message at the start of the buffer. The caller must not remove or
/// change bytes in front of the scanned offset until `Complete` (only append).
#[derive(Debug, Default)]
pub(crate) struct Scanner {
    /// Whether a message is being scanned (false: the next byte starts one).
    active: bool,
    /// Bytes of the message consumed so far (complete items only).
    pos: usize,
    /// Items still to read in the innermost open container; at the outermost level, the
    /// message itself (one item), so nothing left and no outer level means complete.
    left: u64,
    /// The same count for each enclosing level, outermost first.
    outer: Vec<u64>,
    /// Items still to read at every level: a lower bound of the bytes still to come.
    pending: u64,
}

/// Tag bytes, from rmp's [`Marker`] so the format's numbers live in one place. The fix
/// ranges (fixint, fixmap, fixarray, fixstr) are matched as ranges below.
mod tag {
    use rmp::Marker;
    pub const NIL: u8 = Marker::Null.to_u8();
    pub const FALSE: u8 = Marker::False.to_u8();
    pub const TRUE: u8 = Marker::True.to_u8();
    pub const U8: u8 = Marker::U8.to_u8();
    pub const U16: u8 = Marker::U16.to_u8();
    pub const U32: u8 = Marker::U32.to_u8();
    pub const U64: u8 = Marker::U64.to_u8();
    pub const I8: u8 = Marker::I8.to_u8();
    pub const I16: u8 = Marker::I16.to_u8();
    pub const I32: u8 = Marker::I32.to_u8();
    pub const I64: u8 = Marker::I64.to_u8();
    pub const F32: u8 = Marker::F32.to_u8();
    pub const F64: u8 = Marker::F64.to_u8();
    pub const STR8: u8 = Marker::Str8.to_u8();
    pub const STR16: u8 = Marker::Str16.to_u8();
    pub const STR32: u8 = Marker::Str32.to_u8();
    pub const BIN8: u8 = Marker::Bin8.to_u8();
    pub const BIN16: u8 = Marker::Bin16.to_u8();
    pub const BIN32: u8 = Marker::Bin32.to_u8();
    pub const ARRAY16: u8 = Marker::Array16.to_u8();
    pub const ARRAY32: u8 = Marker::Array32.to_u8();
    pub const MAP16: u8 = Marker::Map16.to_u8();
    pub const MAP32: u8 = Marker::Map32.to_u8();
    pub const FIXEXT1: u8 = Marker::FixExt1.to_u8();
    pub const FIXEXT2: u8 = Marker::FixExt2.to_u8();
    pub const FIXEXT4: u8 = Marker::FixExt4.to_u8();
    pub const FIXEXT8: u8 = Marker::FixExt8.to_u8();
    pub const FIXEXT16: u8 = Marker::FixExt16.to_u8();
    pub const EXT8: u8 = Marker::Ext8.to_u8();
    pub const EXT16: u8 = Marker::Ext16.to_u8();
    pub const EXT32: u8 = Marker::Ext32.to_u8();
    pub const RESERVED: u8 = Marker::Reserved.to_u8();
}

/// The framing facts of one item, from its header.
#[derive(Clone, Copy)]
struct Item {
    /// Header plus payload bytes (not counting children of containers).
    len: u64,
    /// Items a container holds (2 per map entry); 0 for scalars.
    children: u64,
    /// Whether it is an array (for the envelope check).
    array: bool,
}

impl Scanner {
    /// Whether a message is part-way through the resumable scan (some of it consumed:
    /// a scan that found only its first bytes missing, or none, holds nothing).
    pub(crate) fn is_active(&self) -> bool {
        self.active && self.pos > 0
    }

    pub(crate) fn reset(&mut self) {
        self.active = false;
        self.pos = 0;
        self.left = 0;
        self.outer.clear();
        self.pending = 0;
    }

    /// Resume scanning `buf` (the same buffer as before, possibly with more bytes appended).
    pub(crate) fn scan(&mut self, buf: &[u8], limits: &Limits) -> Result<Scan, CodecError> {
        if !self.active {
            if let Some(len) = scan_whole(buf, limits) {
                return Ok(Scan::Complete(len));
            }
        }
        self.resume(buf, limits)
    }

    /// [`Self::scan`] without the one-pass try: item by item, resumable.
    fn resume(&mut self, buf: &[u8], limits: &Limits) -> Result<Scan, CodecError> {
        if !self.active {
            self.reset();
            self.active = true;
            self.left = 1;
            self.pending = 1;
        }
        let max = limits.max_message as u64;
        // `get`: a caller that broke the append-only contract gets Incomplete, not a panic.
        let mut rest = buf.get(self.pos..).unwrap_or_default();
        loop {
            // Close every container whose items are all read.
            while self.left == 0 {
                match self.outer.pop() {
                    Some(n) => self.left = n,
                    None => {
                        let len = self.pos;
                        self.reset();
                        return Ok(Scan::Complete(len));
                    }
                }
            }
            let item = match header(rest)? {
                Ok(item) => item,
                Err(need) => return Ok(Scan::Incomplete { need }),
            };
            if self.pos == 0 {
                check_envelope(item, rest)?;
            }
            // This item, plus at least one byte for each item still expected.
            let end = self.pos as u64 + item.len;
            let at_least = end + (self.pending - 1) + item.children;
            if at_least > max {
                return Err(CodecError::TooLarge {
                    limit: limits.max_message,
                    size: at_least,
                });
            }
            if item.len > rest.len() as u64 {
                return Ok(Scan::Incomplete {
                    need: (item.len - rest.len() as u64) as usize,
                });
            }
            // Consume the item (its length fits in `rest`, so in usize).
            rest = &rest[item.len as usize..];
            self.pos = end as usize;
            self.left -= 1;
            self.pending -= 1;
            if item.children > 0 {
                // Levels open: the message level plus one per container, this one included.
                if self.outer.len() + 1 > limits.max_depth {
                    return Err(CodecError::TooDeep {
                        limit: limits.max_depth,
                    });
                }
                self.outer.push(self.left);
                self.left = item.children;
                self.pending += item.children;
            }
        }
    }
}

/// Levels [`scan_whole`] keeps on the stack; a message nested deeper is left to the
/// resumable scan.
const WHOLE_DEPTH: usize = 32;

/// The length of a message that is whole in `buf`, found in one pass with the state in
/// locals, or `None`: incomplete, over a limit, malformed, or nested deeper than
/// [`WHOLE_DEPTH`]. `None` costs nothing but this pass: the resumable [`Scanner`] then
/// scans from the start and tells which it is. Pipelined small calls arrive whole, many
/// per read, and the resumable scan's bookkeeping (its state in `self`, a `Vec` of
/// levels, the byte-budget sums) was a tenth of the time of a typed call.
fn scan_whole(buf: &[u8], limits: &Limits) -> Option<usize> {
    let buf = &buf[..buf.len().min(limits.max_message)];
    // The envelope: a fixarray of 3 or 4 (anything else, refused or not, is the
    // resumable scan's to judge).
    let mut left: usize = match buf.first()? {
        0x93 => 3,
        0x94 => 4,
        _ => return None,
    };
    let max_depth = limits.max_depth.min(WHOLE_DEPTH);
    let mut outer = [0usize; WHOLE_DEPTH];
    let mut depth = 1;
    let mut pos = 1;
    loop {
        while left == 0 {
            depth -= 1;
            if depth == 0 {
                return Some(pos);
            }
            left = outer[depth];
        }
        left -= 1;
        let item = header(buf.get(pos..)?).ok()?.ok()?;
        let (len, children) = (
            usize::try_from(item.len).ok()?,
            usize::try_from(item.children).ok()?,
        );
        pos = pos.checked_add(len)?;
        if pos > buf.len() {
            return None;
        }
        if children > 0 {
            if depth + 1 >= max_depth {
                return None;
            }
            outer[depth] = left;
            depth += 1;
            left = children;
        }
    }
}

/// A message must be an array of 3 (notification) or 4 (request, response) items. Checked
/// on the first header so that garbage is refused at its first byte or three.
fn check_envelope(item: Item, rest: &[u8]) -> Result<(), CodecError> {
    if item.array && (item.children == 3 || item.children == 4) {
        return Ok(());
    }
    Err(CodecError::Malformed(if item.array {
        format!(
            "a message is an array of 3 or 4 items, got {} items",
            item.children
        )
    } else {
        format!(
            "a message is an array of 3 or 4 items, got first byte 0x{:02x} ({})",
            rest[0],
            marker_name(Marker::from_u8(rest[0]))
        )
    }))
}

/// Big-endian length field of `width` bytes at `rest[at..]`, or how many bytes are missing.
#[inline(always)]
fn field(rest: &[u8], at: usize, width: usize) -> Result<u64, usize> {
    match rest.get(at..at + width) {
        Some(b) => Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))),
        None => Err(at + width - rest.len()),
    }
}

/// Decode one item header from the start of `rest`: `Ok(Err(need))` if more bytes are
/// needed to know its size. A plain match on the tag byte: this runs once per item of
/// every message, so it avoids building anything (and is inlined into both scans: a
/// call would return its result through memory).
#[inline(always)]
fn header(rest: &[u8]) -> Result<Result<Item, usize>, CodecError> {
    let Some(&b) = rest.first() else {
        return Ok(Err(1));
    };
    let scalar = |len: u64| {
        Ok(Ok(Item {
            len,
            children: 0,
            array: false,
        }))
    };
    let sized = |len: Result<u64, usize>, head: u64| {
        Ok(len.map(|n| Item {
            len: head + n,
            children: 0,
            array: false,
        }))
    };
    let container = |n: Result<u64, usize>, head: u64, per: u64, array: bool| {
        Ok(n.map(|n| Item {
            len: head,
            children: per * n,
            array,
        }))
    };
    use tag::*;
    match b {
        // positive fixint, negative fixint, nil, false, true
        0x00..=0x7f | 0xe0..=0xff | NIL | FALSE | TRUE => scalar(1),
        0x80..=0x8f => container(Ok(u64::from(b & 0x0f)), 1, 2, false), // fixmap
        0x90..=0x9f => container(Ok(u64::from(b & 0x0f)), 1, 1, true),  // fixarray
        0xa0..=0xbf => scalar(1 + u64::from(b & 0x1f)),                 // fixstr
        U8 | I8 => scalar(2),
        U16 | I16 => scalar(3),
        U32 | I32 | F32 => scalar(5),
        U64 | I64 | F64 => scalar(9),
        // fixext: tag, type, data
        FIXEXT1 => scalar(3),
        FIXEXT2 => scalar(4),
        FIXEXT4 => scalar(6),
        FIXEXT8 => scalar(10),
        FIXEXT16 => scalar(18),
        STR8 | BIN8 => sized(field(rest, 1, 1), 2),
        STR16 | BIN16 => sized(field(rest, 1, 2), 3),
        STR32 | BIN32 => sized(field(rest, 1, 4), 5),
        // ext: tag, length, type, data
        EXT8 => sized(field(rest, 1, 1), 3),
        EXT16 => sized(field(rest, 1, 2), 4),
        EXT32 => sized(field(rest, 1, 4), 6),
        ARRAY16 => container(field(rest, 1, 2), 3, 1, true),
        ARRAY32 => container(field(rest, 1, 4), 5, 1, true),
        MAP16 => container(field(rest, 1, 2), 3, 2, false),
        MAP32 => container(field(rest, 1, 4), 5, 2, false),
        RESERVED => Err(CodecError::Malformed(
            "byte 0xc1 is reserved, not msgpack".into(),
        )),
    }
}

/// A name for a marker in error messages.
pub(crate) fn marker_name(m: Marker) -> &'static str {
    match m {
        Marker::FixPos(_) | Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => "uint",
        Marker::FixNeg(_) | Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => "int",
        Marker::Null => "nil",
        Marker::True | Marker::False => "bool",
        Marker::F32 | Marker::F64 => "float",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "str",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "bin",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "array",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "map",
        Marker::FixExt1
        | Marker::FixExt2
        | Marker::FixExt4
        | Marker::FixExt8
        | Marker::FixExt16
        | Marker::Ext8
        | Marker::Ext16
        | Marker::Ext32 => "ext",
        Marker::Reserved => "reserved",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn finds_the_end_and_resumes_where_it_stopped() {
        // [0, 1, "echo", [[1, 2], {"k": b"\x00"}]] followed by a next message's first byte
        let msg: &[u8] = &[
            0x94, 0x00, 0x01, 0xa4, b'e', b'c', b'h', b'o', 0x92, 0x92, 0x01, 0x02, 0x81, 0xa1,
            b'k', 0xc4, 0x01, 0x00,
        ];
        let mut s = Scanner::default();
        for cut in 0..msg.len() {
            let r = s.scan(&msg[..cut], &limits()).unwrap();
            assert!(matches!(r, Scan::Incomplete { need } if need >= 1), "{cut}");
            // The scanner never consumes past what it has seen.
            assert!(s.pos <= cut);
            assert!(s.active);
        }
        let mut whole = msg.to_vec();
        whole.push(0x93);
        assert_eq!(
            s.scan(&whole, &limits()).unwrap(),
            Scan::Complete(msg.len())
        );
        assert!(!s.active && s.outer.is_empty());
    }

    #[test]
    fn declared_sizes_hit_the_cap_before_the_data_arrives() {
        let l = Limits {
            max_message: 1000,
            max_depth: 64,
        };
        // [0, 1, "m", str32 of 1 MB ...]: refused on its header.
        let head = [0x94, 0x00, 0x01, 0xa1, b'm', 0xdb, 0x00, 0x10, 0x00, 0x00];
        let err = Scanner::default().scan(&head, &l).unwrap_err();
        assert!(
            matches!(err, CodecError::TooLarge { limit: 1000, .. }),
            "{err}"
        );
        // An array32 of 4 billion items: refused on its header too.
        let head = [0x94, 0x00, 0x01, 0xa1, b'm', 0xdd, 0xff, 0xff, 0xff, 0xff];
        let err = Scanner::default().scan(&head, &l).unwrap_err();
        assert!(matches!(err, CodecError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn depth_cap_counts_the_message_array() {
        let l = Limits {
            max_message: 1000,
            max_depth: 3,
        };
        // [0, 1, "m", [[nil]]] has 3 levels: the message, params, one inner array.
        let ok = [0x94, 0x00, 0x01, 0xa1, b'm', 0x91, 0x91, 0xc0];
        assert_eq!(Scanner::default().scan(&ok, &l).unwrap(), Scan::Complete(8));
        let deep = [0x94, 0x00, 0x01, 0xa1, b'm', 0x91, 0x91, 0x91, 0xc0];
        let err = Scanner::default().scan(&deep, &l).unwrap_err();
        assert!(matches!(err, CodecError::TooDeep { limit: 3 }), "{err}");
    }

    #[test]
    fn garbage_is_refused_at_the_first_byte() {
        for (bytes, want) in [
            (&b"GET / HTTP/1.1\r\n"[..], "0x47"),
            (&[0x92, 0x00][..], "got 2 items"),
            (&[0x80][..], "map"),
            (&[0xc1][..], "reserved"),
            (&[0xdc, 0x00, 0x05][..], "got 5 items"),
        ] {
            let err = Scanner::default().scan(bytes, &limits()).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
        // A reserved byte inside a message is refused when reached.
        let err = Scanner::default()
            .scan(&[0x94, 0x00, 0xc1], &limits())
            .unwrap_err();
        assert!(err.to_string().contains("reserved"), "{err}");
    }

    #[test]
    fn extensions_are_framed_by_their_length() {
        // [2, "t", [ext8(len 12, type -1, 12 bytes), fixext4]]
        let mut msg = vec![0x93, 0x02, 0xa1, b't', 0x92, 0xc7, 12, 0xff];
        msg.extend_from_slice(&[0; 12]);
        msg.extend_from_slice(&[0xd6, 0xff, 0, 0, 0, 0]);
        let mut s = Scanner::default();
        assert!(matches!(
            s.scan(&msg[..msg.len() - 1], &limits()).unwrap(),
            Scan::Incomplete { need: 1 }
        ));
        assert_eq!(s.scan(&msg, &limits()).unwrap(), Scan::Complete(msg.len()));
    }

    /// A random msgpack item: every kind the one-pass scan knows, and extension types
    /// it leaves to the resumable one.
    fn random_item(rng: &mut fastrand::Rng, out: &mut Vec<u8>, depth: usize) {
        let pick = if depth > 4 {
            rng.u8(0..6)
        } else {
            rng.u8(0..10)
        };
        match pick {
            0 => out.push(rng.u8(0..0x80)),
            1 => out.extend_from_slice(&[0xd3, 1, 2, 3, 4, 5, 6, 7, 8]),
            2 => {
                let n = rng.usize(0..40);
                if n < 32 {
                    out.push(0xa0 | n as u8);
                } else {
                    out.extend_from_slice(&[0xd9, n as u8]);
                }
                out.extend(std::iter::repeat_n(b'x', n));
            }
            3 => out.extend_from_slice(&[0xda, 0, 3, b'a', b'b', b'c']),
            4 => out.extend_from_slice(&[0xc4, 2, 0, 1]),
            5 => out.extend_from_slice(&[0xd6, 0xff, 0, 0, 0, 1]),
            6 | 7 => {
                let n = rng.usize(0..5);
                out.push(0x90 | n as u8);
                (0..n).for_each(|_| random_item(rng, out, depth + 1));
            }
            8 => {
                let n = rng.usize(0..4);
                out.push(0x80 | n as u8);
                (0..2 * n).for_each(|_| random_item(rng, out, depth + 1));
            }
            _ => {
                let n = rng.usize(0..3);
                out.extend_from_slice(&[0xdc, 0, n as u8]);
                (0..n).for_each(|_| random_item(rng, out, depth + 1));
            }
        }
    }

    #[test]
    fn one_pass_scan_agrees_with_the_resumable_one() {
        let mut rng = fastrand::Rng::with_seed(7);
        let tight = Limits {
            max_message: 200,
            max_depth: 4,
        };
        for _ in 0..3000 {
            let mut msg = vec![0x94, 0x00, 0x01, 0xa1, b'm'];
            random_item(&mut rng, &mut msg, 0);
            // Sometimes garbage after it, or instead of it.
            if rng.bool() {
                msg.extend_from_slice(&[0xc1, 0x93]);
            }
            if rng.u8(0..8) == 0 {
                let at = rng.usize(0..msg.len());
                msg[at] = rng.u8(..);
            }
            for l in [limits(), tight] {
                for cut in [msg.len(), rng.usize(0..=msg.len())] {
                    let buf = &msg[..cut];
                    let slow = Scanner::default().resume(buf, &l);
                    if let Some(n) = scan_whole(buf, &l) {
                        assert!(
                            matches!(slow, Ok(Scan::Complete(m)) if m == n),
                            "{buf:02x?}: {slow:?}"
                        );
                    }
                    // And what callers see is the resumable scan's answer, always.
                    let both = Scanner::default().scan(buf, &l);
                    assert_eq!(format!("{both:?}"), format!("{slow:?}"), "{buf:02x?}");
                }
            }
        }
    }
}
