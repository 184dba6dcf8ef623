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
        for (i, &b) in buf[..limit].iter().enumerate().skip(self.pos) {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        if i + 1 - start > self.max {
                            return self.too_large();
                        }
                        self.reset();
                        return Split::Value { start, end: i + 1 };
                    }
                }
                _ => {}
            }
        }
        self.pos = limit;
        if limit - start > self.max {
            self.too_large()
        } else {
            Split::Incomplete
        }
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
