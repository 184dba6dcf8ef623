//! Find where one JSON value ends in a byte stream, for JSON-RPC over raw TCP.
//!
//! Clients send requests one per line or simply back to back, so framing is by
//! bracket depth. The splitter keeps its scan position between calls: bytes that
//! arrive one at a time are each looked at once (never re-scanned from the start).
//! Hand-written because no crate splits concatenated JSON incrementally with a cap.
//!
//! What a stream gives depends only on its bytes, never on how reads cut it (a
//! property test feeds the same streams whole, byte by byte and in random pieces):
//! - **Lead**: whitespace and UTF-8 byte order marks (`EF BB BF`, as some Windows
//!   clients put before each message) before a value are skipped; they are consumed
//!   with the value that follows (`Value { start }` points past them). A lead of more
//!   than `max_frame` bytes is [`Split::TooLarge`].
//! - **Value**: from `{` or `[` to its matching close, at most `max_frame` bytes; a longer
//!   one is [`Split::TooLarge`] as soon as `max_frame + 1` bytes of it are seen, whether
//!   or not its end is already in the buffer.
//! - **Garbage**: anything else starts a garbage line, skipped through its newline and
//!   reported once, as one [`Split::Garbage`] with `skip > 0` (`{` inside it starts
//!   nothing). Its bytes stay in the caller's buffer until the newline comes, so a
//!   garbage line is capped like a value: more than `max_frame` bytes before its newline
//!   is [`Split::TooLarge`], in every chunking (the whole line at once included).
//! - After [`Split::TooLarge`] the stream cannot be resynchronised: every later call
//!   says `TooLarge` again.

/// What the buffer holds next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// A complete value in `buf[start..end]`; consume `end` bytes.
    Value {
        /// Offset of the value's first byte (after any whitespace or BOM).
        start: usize,
        /// Offset just past its last byte.
        end: usize,
    },
    /// Need more bytes.
    Incomplete,
    /// Bytes that cannot start a request (not `{` or `[`). Consume `skip` bytes (through
    /// the next newline) to resynchronise; `skip == 0` means no newline yet (need more
    /// bytes; nothing to report yet).
    Garbage {
        /// Bytes to consume.
        skip: usize,
    },
    /// The value, garbage line or lead in progress is longer than the cap: the stream
    /// cannot be resynchronised.
    TooLarge,
}

/// What a stream ended in the middle of: [`Splitter::unfinished`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfinished {
    /// A value begun at `start` whose closing bracket never came.
    Value {
        /// Offset of its first byte in the caller's buffer.
        start: usize,
        /// Brackets still open (`{"a":[1` has 2).
        open: usize,
        /// Inside a string (a missing `"`).
        in_string: bool,
    },
    /// A garbage line (not starting with `{` or `[`) without its newline.
    Garbage,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The quotes, backslashes and brackets of a block of 64 bytes, one bit per byte (bit
/// `k` for byte `k`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Marks {
    quotes: u64,
    backslashes: u64,
    brackets: u64,
}

/// [`Marks`] of a block: 16 bytes per compare where SSE2 is there (every x86_64), a
/// byte at a time elsewhere.
#[inline(always)]
fn marks(block: &[u8; 64]) -> Marks {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    // SAFETY: this is compiled only where the whole build has SSE2 on (the cfg above),
    // which is all `marks_sse2`'s `target_feature` asks of its caller.
    return unsafe { marks_sse2(block) };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    return marks_bytewise(block);
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn marks_bytewise(block: &[u8; 64]) -> Marks {
    let mut m = Marks::default();
    for (k, &b) in block.iter().enumerate() {
        m.quotes |= u64::from(b == b'"') << k;
        m.backslashes |= u64::from(b == b'\\') << k;
        m.brackets |= u64::from(matches!(b, b'{' | b'}' | b'[' | b']')) << k;
    }
    m
}

/// Hand-written because the compiler does not turn `marks_bytewise` into these compares
/// and byte masks (it was tried: it widens every byte to 64 bits instead).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn marks_sse2(block: &[u8; 64]) -> Marks {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x,
    };
    let byte = |b: u8| _mm_set1_epi8(b as i8);
    let mut m = Marks::default();
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let (lo, hi) = lane.split_at(8);
        let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) as i64;
        let v = _mm_set_epi64x(word(hi), word(lo));
        // `| 0x20` folds `[` onto `{` and `]` onto `}`, and nothing else onto either.
        let folded = _mm_or_si128(v, byte(0x20));
        let mask = |x| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
        m.quotes |= mask(_mm_cmpeq_epi8(v, byte(b'"')));
        m.backslashes |= mask(_mm_cmpeq_epi8(v, byte(b'\\')));
        m.brackets |= mask(_mm_or_si128(
            _mm_cmpeq_epi8(folded, byte(b'{')),
            _mm_cmpeq_epi8(folded, byte(b'}')),
        ));
    }
    m
}

/// Finds where each JSON value ends in a byte stream, incrementally: bytes already
/// scanned are not scanned again when more arrive.
#[derive(Debug, Default)]
pub struct Splitter {
    max: usize,
    /// Offset of the value's first byte, once found.
    start: Option<usize>,
    /// Offset scanned so far.
    pos: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Offset where a garbage line began, while its newline has not arrived: later bytes
    /// are searched from `pos` on, never rescanned, and a `{` in them starts nothing.
    garbage_from: Option<usize>,
    /// Set once `TooLarge` was answered: it is the answer from then on.
    too_large: bool,
}

impl Splitter {
    /// A splitter that answers `TooLarge` past `max_frame` bytes of one value.
    pub fn new(max_frame: usize) -> Self {
        Splitter {
            max: max_frame,
            ..Default::default()
        }
    }

    /// Scan `buf` (which starts where the last consumed value ended) onwards from
    /// where the previous call stopped. After a `Value` or `Garbage { skip > 0 }`,
    /// the caller consumes bytes from the front and the splitter starts afresh.
    pub fn next(&mut self, buf: &[u8]) -> Split {
        if self.too_large {
            return Split::TooLarge;
        }
        if let Some(at) = self.garbage_from {
            return self.skip_garbage(buf, at);
        }
        if self.start.is_none() {
            let at = match self.skip_lead(buf) {
                Ok(at) => at,
                Err(split) => return split,
            };
            if !matches!(buf[at], b'{' | b'[') {
                self.pos = at;
                return self.skip_garbage(buf, at);
            }
            self.start = Some(at);
            self.pos = at;
        }
        let start = self.start.unwrap_or(0);
        // Never look past the cap: a value that is complete in the buffer but longer
        // than `max` is refused like one still arriving.
        let limit = buf
            .len()
            .min(start.saturating_add(self.max).saturating_add(1));
        match self.scan(buf, limit) {
            Some(end) if end - start > self.max => self.too_large(),
            Some(end) => {
                self.reset();
                Split::Value { start, end }
            }
            None if limit - start > self.max => self.too_large(),
            None => Split::Incomplete,
        }
    }

    /// Scan `buf[pos..limit]` for the byte that closes the value: `Some` offset just past
    /// it, or `None` with `pos`, depth and string state saved for the next call.
    ///
    /// 64 bytes at a time (this scan was 12 % of JSON-RPC over TCP, issue 41): [`marks`]
    /// finds the block's quotes, backslashes and brackets; in a block without a
    /// backslash (nor a byte escaped by the block before), a prefix XOR of the quote
    /// marks says which bytes are inside a string, so only the brackets outside strings
    /// are visited, without a branch per byte or per quote. A block with a backslash is
    /// walked mark by mark, as the byte loop did. Hand-written, because no crate splits
    /// concatenated JSON: memchr finds at most three bytes and keeps no string state;
    /// simd-json and sonic-rs parse one whole value already framed in its buffer.
    fn scan(&mut self, buf: &[u8], limit: usize) -> Option<usize> {
        let mut in_string = self.in_string;
        let mut depth = self.depth;
        // The offset of the byte a backslash escapes (only ever inside a string).
        let mut escaped_at = if self.escaped { self.pos } else { usize::MAX };
        let mut at = self.pos;
        while at < limit {
            let n = (limit - at).min(64);
            let m = match buf.get(at..at + 64).map(<&[u8; 64]>::try_from) {
                Some(Ok(block)) if n == 64 => marks(block),
                // The last bytes, padded with 0, which is none of the marked bytes.
                _ => {
                    let mut block = [0u8; 64];
                    block[..n].copy_from_slice(&buf[at..at + n]);
                    marks(&block)
                }
            };
            if m.backslashes == 0 && !(at..at + n).contains(&escaped_at) {
                // Bit k of `inside`: the parity of the quotes at bytes 0..=k, flipped when
                // the block starts inside a string, so set where byte k is inside one.
                let mut inside = m.quotes;
                for shift in [1, 2, 4, 8, 16, 32] {
                    inside ^= inside << shift;
                }
                if in_string {
                    inside = !inside;
                }
                in_string = inside >> 63 != 0;
                let mut outside = m.brackets & !inside;
                while outside != 0 {
                    let i = at + outside.trailing_zeros() as usize;
                    outside &= outside - 1;
                    if matches!(buf[i], b'{' | b'[') {
                        depth += 1;
                    } else {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                }
                at += n;
                continue;
            }
            let mut marked = m.quotes | m.backslashes | m.brackets;
            while marked != 0 {
                let i = at + marked.trailing_zeros() as usize;
                marked &= marked - 1;
                let b = buf[i];
                if in_string {
                    if i == escaped_at {
                        continue;
                    }
                    match b {
                        b'\\' => escaped_at = i + 1,
                        b'"' => in_string = false,
                        _ => {}
                    }
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
            }
            at += n;
        }
        self.pos = limit;
        self.in_string = in_string;
        self.depth = depth;
        self.escaped = escaped_at == limit;
        None
    }

    /// When the stream ends (the peer's EOF, an idle close) after [`Splitter::next`]
    /// answered `Incomplete` or `Garbage { skip: 0 }`: the value or garbage line left
    /// unfinished, if any (whitespace alone is nothing). A value missing its closing
    /// brace, hand-typed into `nc`, would otherwise go unanswered.
    pub fn unfinished(&self) -> Option<Unfinished> {
        if self.too_large {
            return None;
        }
        if self.garbage_from.is_some() {
            return Some(Unfinished::Garbage);
        }
        self.start.map(|start| Unfinished::Value {
            start,
            open: self.depth,
            in_string: self.in_string,
        })
    }

    /// Move past whitespace and byte order marks from `pos` on: `Ok` with the offset of
    /// the first byte after them, or the answer when the buffer ends first (or the lead
    /// is over the cap).
    fn skip_lead(&mut self, buf: &[u8]) -> Result<usize, Split> {
        let mut i = self.pos;
        loop {
            if i > self.max {
                return Err(self.too_large());
            }
            match buf.get(i) {
                Some(b) if b.is_ascii_whitespace() => i += 1,
                Some(0xEF) if buf[i..].starts_with(BOM) => i += 3,
                // A mark cut by the read: wait for the rest before judging it.
                Some(0xEF) if BOM.starts_with(&buf[i..]) => break,
                Some(_) => return Ok(i),
                None => break,
            }
        }
        self.pos = i;
        Err(Split::Incomplete)
    }

    /// Look for the newline that ends a garbage line begun at `at`, from `pos` on, among
    /// the first `max + 1` bytes of the line.
    fn skip_garbage(&mut self, buf: &[u8], at: usize) -> Split {
        let window = buf.len().min(at.saturating_add(self.max).saturating_add(1));
        match buf[self.pos.min(window)..window]
            .iter()
            .position(|&b| b == b'\n')
        {
            Some(nl) => {
                let skip = self.pos + nl + 1;
                self.reset();
                Split::Garbage { skip }
            }
            None if buf.len() - at > self.max => self.too_large(),
            None => {
                self.garbage_from = Some(at);
                self.pos = buf.len();
                Split::Garbage { skip: 0 }
            }
        }
    }

    fn too_large(&mut self) -> Split {
        self.too_large = true;
        Split::TooLarge
    }

    fn reset(&mut self) {
        *self = Splitter::new(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], step: usize) -> Vec<String> {
        let mut sp = Splitter::new(1 << 20);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for chunk in input.chunks(step) {
            buf.extend_from_slice(chunk);
            loop {
                match sp.next(&buf) {
                    Split::Value { start, end } => {
                        out.push(String::from_utf8(buf[start..end].to_vec()).unwrap());
                        buf.drain(..end);
                    }
                    Split::Garbage { skip } if skip > 0 => {
                        out.push("<garbage>".into());
                        buf.drain(..skip);
                    }
                    _ => break,
                }
            }
        }
        out
    }

    /// The scan before the block-at-a-time one, a byte at a time: the oracle for `scan`.
    fn scan_bytewise(sp: &mut Splitter, buf: &[u8], limit: usize) -> Option<usize> {
        for (i, &b) in buf[..limit].iter().enumerate().skip(sp.pos) {
            if sp.in_string {
                if sp.escaped {
                    sp.escaped = false;
                } else if b == b'\\' {
                    sp.escaped = true;
                } else if b == b'"' {
                    sp.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => sp.in_string = true,
                b'{' | b'[' => sp.depth += 1,
                b'}' | b']' => {
                    sp.depth = sp.depth.saturating_sub(1);
                    if sp.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        sp.pos = limit;
        None
    }

    #[test]
    fn the_block_marks_agree_with_a_byte_loop() {
        const BYTES: &[u8] = b"\"\\{}[]Z^|~;=ab 0\x7f\x80\xfb\xfd\xdc\xa2\x02\xa0";
        let mut rng = fastrand::Rng::with_seed(64);
        for _ in 0..20_000 {
            let mut block = [0u8; 64];
            block.fill_with(|| BYTES[rng.usize(..BYTES.len())]);
            assert_eq!(marks(&block), marks_bytewise(&block), "{block:?}");
        }
        let every: Vec<u8> = (0..=255).collect();
        for block in every.chunks_exact(64) {
            assert_eq!(
                marks(block.try_into().unwrap()),
                marks_bytewise(block.try_into().unwrap())
            );
        }
    }

    #[test]
    fn the_block_scan_agrees_with_a_byte_scan_in_every_chunking() {
        // Every byte the mask tells apart, their neighbours and what `| 0x20` folds
        // (`Z` `^` `|` `~` `_` `!` `#` `\x02`), high bytes and plain letters; backslashes
        // from every other byte to none in a block, so both ways through a block are
        // taken; more openings than closings, so values run over several blocks.
        const OTHER: &[u8] = b"Z^|~;=az_!# 0\x7f\x80\xfb\xfd\xdc\xa2\x02\x01";
        let mut rng = fastrand::Rng::with_seed(41);
        for _ in 0..20_000 {
            let len = rng.usize(1..300);
            let backslash = [2, 10, 100, 5000][rng.usize(..4)];
            let mut buf: Vec<u8> = (0..len)
                .map(|_| match rng.usize(..1000) {
                    _ if rng.usize(..backslash) == 0 => b'\\',
                    0..=149 => b'"',
                    150..=189 => b"{["[rng.usize(..2)],
                    190..=209 => b"}]"[rng.usize(..2)],
                    _ => OTHER[rng.usize(..OTHER.len())],
                })
                .collect();
            buf[0] = if rng.bool() { b'{' } else { b'[' };
            let limit = rng.usize(1..=len);
            let (mut word, mut byte) = (Splitter::new(1 << 20), Splitter::new(1 << 20));
            // Fed in pieces, as reads cut it: the state carried between calls must agree.
            let mut upto = 0;
            while upto < limit {
                let most = if rng.bool() { 17 } else { 150 };
                upto = (upto + rng.usize(1..=most)).min(limit);
                let (w, b) = (word.scan(&buf, upto), scan_bytewise(&mut byte, &buf, upto));
                assert_eq!(w, b, "{:?} to {upto}", String::from_utf8_lossy(&buf));
                if w.is_some() {
                    break;
                }
                assert_eq!(
                    (word.pos, word.depth, word.in_string, word.escaped),
                    (byte.pos, byte.depth, byte.in_string, byte.escaped),
                    "{:?} to {upto}",
                    String::from_utf8_lossy(&buf)
                );
            }
        }
    }

    #[test]
    fn splits_lines_and_concatenation_byte_by_byte_too() {
        let input = br#"{"a":"}\"{"} [1,[2]]
{"b":{}}
oops
 {"c":1}"#;
        let want = vec![
            r#"{"a":"}\"{"}"#,
            "[1,[2]]",
            r#"{"b":{}}"#,
            "<garbage>",
            r#"{"c":1}"#,
        ];
        assert_eq!(all(input, input.len()), want);
        assert_eq!(all(input, 1), want);
        assert_eq!(all(input, 3), want);
    }

    #[test]
    fn a_garbage_line_in_pieces_is_skipped_whole() {
        let mut sp = Splitter::new(1 << 20);
        assert_eq!(sp.next(b"xx"), Split::Garbage { skip: 0 });
        // a `{` inside the garbage line starts no value
        assert_eq!(sp.next(b"xx {\"a\""), Split::Garbage { skip: 0 });
        assert_eq!(sp.next(b"xx {\"a\"\n{}"), Split::Garbage { skip: 8 });
        assert_eq!(sp.next(b"{}"), Split::Value { start: 0, end: 2 });
    }

    #[test]
    fn tells_what_the_stream_ended_in() {
        let mut sp = Splitter::new(1 << 20);
        assert_eq!(sp.next(b"  \n"), Split::Incomplete);
        assert_eq!(sp.unfinished(), None, "whitespace is nothing");
        assert_eq!(sp.next(b"  \n{\"a\":[1"), Split::Incomplete);
        let open = Unfinished::Value {
            start: 3,
            open: 2,
            in_string: false,
        };
        assert_eq!(sp.unfinished(), Some(open));
        assert_eq!(sp.next(b"  \n{\"a\":[1,\"x"), Split::Incomplete);
        assert!(matches!(
            sp.unfinished(),
            Some(Unfinished::Value {
                in_string: true,
                ..
            })
        ));
        assert_eq!(
            sp.next(b"  \n{\"a\":[1,\"x\"]}"),
            Split::Value { start: 3, end: 16 }
        );
        assert_eq!(sp.unfinished(), None);
        assert_eq!(sp.next(b"oops"), Split::Garbage { skip: 0 });
        assert_eq!(sp.unfinished(), Some(Unfinished::Garbage));
    }

    #[test]
    fn caps_an_endless_value() {
        let mut sp = Splitter::new(8);
        assert_eq!(sp.next(b"[1,2,3"), Split::Incomplete);
        assert_eq!(sp.next(b"[1,2,3,4,5,6"), Split::TooLarge);
        let mut sp = Splitter::new(8);
        assert_eq!(sp.next(b"xxxxxxxxxxxxxxxx"), Split::TooLarge);
        // Complete in one read, still too large; exactly the cap is fine.
        let mut sp = Splitter::new(8);
        assert_eq!(sp.next(b"[1,2,3,4,5]\n"), Split::TooLarge);
        let mut sp = Splitter::new(8);
        assert_eq!(sp.next(b" [1,2,34]"), Split::Value { start: 1, end: 9 });
    }
}
