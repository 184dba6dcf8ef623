//! The incremental frame decoder.
//!
//! ```text
//! frame   = command EOL *( header EOL ) EOL body NUL *( EOL )
//! EOL     = [CR] LF
//! ```
//! Bytes are consumed from the buffer as each line completes, so the buffer always starts
//! at the first byte not yet understood. Within an unfinished line (or a NUL-terminated
//! body) `scanned` remembers how far the delimiter search has already gone, so each
//! byte is searched once however the input is split: a client that sends one byte per
//! packet costs O(n), not O(n²). Caps are checked against what has arrived, before
//! waiting for more, so the buffer never grows much past `Limits::max_frame`.

use std::mem;

use bytes::{Buf, BytesMut};

use crate::error::{snippet, StompError};
use crate::escape::{class, classify, unescape};
use crate::{Command, Frame, Item, Limits};
use rpcmux_value::Str;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between frames: EOLs are heart-beats, anything else starts a command line.
    Idle,
    /// Reading the command line.
    Command,
    /// Reading header lines, up to the blank line.
    Headers,
    /// Reading the body (`content_length` bytes, or up to the first NUL) and its NUL.
    Body,
}

/// Where the search for the end of the current line got to.
enum Scan {
    /// A complete line: its content is `src[..content_end]` (CR of a CRLF stripped) and
    /// the next line starts at `src[next]`.
    Line { content_end: usize, next: usize },
    /// A NUL at `src[.0]` came before the LF: the frame ended inside its command or
    /// headers.
    Nul(usize),
    /// No LF yet; everything in the buffer has been searched.
    Pending,
}

/// Decoder state for one connection. Not `Clone` on purpose: it is tied to one buffer.
#[derive(Debug)]
pub(crate) struct FrameDecoder {
    phase: Phase,
    /// Bytes at the start of the buffer already searched for the current delimiter.
    scanned: usize,
    /// Bytes of the current frame already consumed from the buffer (command and header
    /// lines with their EOLs), counted against `max_frame`.
    frame_len: usize,
    command: Command,
    headers: Vec<(Str, Str)>,
    /// The first `content-length` header, once seen (later ones are ignored).
    content_length: Option<usize>,
    /// Set by the first error: STOMP cannot resynchronise, so all later calls fail.
    poisoned: bool,
}

impl FrameDecoder {
    pub(crate) fn new() -> FrameDecoder {
        FrameDecoder {
            phase: Phase::Idle,
            scanned: 0,
            frame_len: 0,
            command: Command::Send,
            headers: Vec::new(),
            content_length: None,
            poisoned: false,
        }
    }

    /// True between frames (nothing of a frame has been consumed yet).
    pub(crate) fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    pub(crate) fn poison(&mut self) {
        self.poisoned = true;
    }

    /// Decode the next item from `src`, consuming its bytes; `Ok(None)` when more bytes
    /// are needed. After an error every later call returns [`StompError::Poisoned`].
    pub(crate) fn decode(
        &mut self,
        limits: &Limits,
        src: &mut BytesMut,
    ) -> Result<Option<Item>, StompError> {
        if self.poisoned {
            return Err(StompError::Poisoned);
        }
        let result = self.step(limits, src);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn step(&mut self, limits: &Limits, src: &mut BytesMut) -> Result<Option<Item>, StompError> {
        loop {
            match self.phase {
                Phase::Idle => match src.first() {
                    None => return Ok(None),
                    Some(b'\n') => {
                        src.advance(1);
                        return Ok(Some(Item::Heartbeat));
                    }
                    Some(b'\r') => match src.get(1) {
                        None => return Ok(None),
                        Some(b'\n') => {
                            src.advance(2);
                            return Ok(Some(Item::Heartbeat));
                        }
                        Some(_) => return Err(StompError::BadCommand(snippet(&src[..2]))),
                    },
                    Some(_) => {
                        self.phase = Phase::Command;
                        self.scanned = 0;
                        self.frame_len = 0;
                    }
                },
                Phase::Command => {
                    // No command is longer than MAX_LEN, so there is no point buffering a
                    // longer line: refuse it as soon as it is too long to be one.
                    let (content_end, next) = match self.scan_line(limits, src, Command::MAX_LEN) {
                        Ok(Scan::Line { content_end, next }) => (content_end, next),
                        Ok(Scan::Pending) => return Ok(None),
                        // Quote only bytes that every split of the input has delivered by
                        // now, so the message does not depend on packet boundaries.
                        Ok(Scan::Nul(nul)) => {
                            return Err(StompError::BadCommand(snippet(&src[..=nul])))
                        }
                        Err(StompError::HeaderTooLong { .. }) => {
                            let line = &src[..Command::MAX_LEN + 1];
                            return Err(StompError::BadCommand(snippet(line)));
                        }
                        Err(e) => return Err(e),
                    };
                    let line = &src[..content_end];
                    self.command = Command::parse(line)
                        .ok_or_else(|| StompError::BadCommand(snippet(line)))?;
                    self.consume_line(src, next);
                    self.headers = Vec::new();
                    self.content_length = None;
                    self.phase = Phase::Headers;
                }
                Phase::Headers => {
                    let (content_end, next) =
                        match self.scan_line(limits, src, limits.max_header_line)? {
                            Scan::Line { content_end, next } => (content_end, next),
                            Scan::Pending => return Ok(None),
                            Scan::Nul(_) => {
                                return Err(StompError::BadHeader(
                                    "frame ended (NUL) before the blank line after the headers"
                                        .into(),
                                ))
                            }
                        };
                    if content_end == 0 {
                        self.consume_line(src, next);
                        self.start_body(limits)?;
                        continue;
                    }
                    self.parse_header(limits, &src[..content_end])?;
                    self.consume_line(src, next);
                }
                Phase::Body => {
                    return match self.content_length {
                        Some(len) => self.body_by_length(src, len),
                        None => self.body_to_nul(limits, src),
                    }
                }
            }
        }
    }

    /// Search for the LF ending the current line, at most `max_line` content bytes long
    /// (plus an optional CR), resuming where the previous call stopped.
    ///
    /// The search never looks past the first byte that would break a cap, and which
    /// error is reported depends only on the bytes inside that bound. So the outcome is
    /// the same however the input is split into reads (the tests check this).
    fn scan_line(
        &mut self,
        limits: &Limits,
        src: &BytesMut,
        max_line: usize,
    ) -> Result<Scan, StompError> {
        // A line is `content [CR] LF`: its LF is at index max_line + 1 at the latest,
        // and the line with its LF must fit in what is left of max_frame.
        let line_bound = max_line.saturating_add(2);
        let room = limits.max_frame.saturating_sub(self.frame_len);
        let bound = line_bound.min(room);
        let window = src.len().min(bound);
        match memchr::memchr2(b'\n', b'\0', &src[self.scanned..window]) {
            Some(i) => {
                let lf = self.scanned + i;
                if src[lf] == b'\0' {
                    return Ok(Scan::Nul(lf));
                }
                let content_end = if lf > 0 && src[lf - 1] == b'\r' {
                    lf - 1
                } else {
                    lf
                };
                if content_end > max_line {
                    return Err(StompError::HeaderTooLong {
                        limit: limits.max_header_line,
                    });
                }
                Ok(Scan::Line {
                    content_end,
                    next: lf + 1,
                })
            }
            None if window < bound => {
                self.scanned = window;
                Ok(Scan::Pending)
            }
            // `bound` bytes and no LF among them.
            None if room < line_bound => Err(StompError::FrameTooLarge {
                limit: limits.max_frame,
            }),
            None => Err(StompError::HeaderTooLong {
                limit: limits.max_header_line,
            }),
        }
    }

    /// `more` bytes at the start of the buffer belong to the current frame.
    fn check_frame_size(&self, limits: &Limits, more: usize) -> Result<(), StompError> {
        if self.frame_len.saturating_add(more) > limits.max_frame {
            return Err(StompError::FrameTooLarge {
                limit: limits.max_frame,
            });
        }
        Ok(())
    }

    fn consume_line(&mut self, src: &mut BytesMut, next: usize) {
        src.advance(next);
        self.frame_len += next;
        self.scanned = 0;
    }

    /// One `name:value` line (EOL already stripped).
    fn parse_header(&mut self, limits: &Limits, line: &[u8]) -> Result<(), StompError> {
        if self.headers.len() >= limits.max_headers {
            return Err(StompError::TooManyHeaders {
                limit: limits.max_headers,
            });
        }
        let seen = classify(line);
        // The grammar allows neither CR nor LF inside a header line; a bare CR is most
        // likely an attempt to smuggle a header past a CRLF-splitting peer.
        if seen & class::EOL != 0 {
            return Err(StompError::BadHeader(format!(
                "carriage return inside {}",
                snippet(line)
            )));
        }
        let colon = memchr::memchr(b':', line).ok_or_else(|| {
            StompError::BadHeader(format!("no colon in header line {}", snippet(line)))
        })?;
        if colon == 0 {
            return Err(StompError::BadHeader(format!(
                "empty header name in {}",
                snippet(line)
            )));
        }
        // The first colon separates: with escaping, colons in names and values arrive as
        // `\c`; without (CONNECT), a raw colon in the value, e.g. `passcode:pa:ss`, is
        // kept, which is what stomp.py and 1.0-era clients send.
        let escaped = self.command.escapes_headers() && seen & class::BACKSLASH != 0;
        let name = unescape(&line[..colon], escaped)?;
        let value = unescape(&line[colon + 1..], escaped)?;
        if name == "content-length" && self.content_length.is_none() {
            // First occurrence wins (spec); later repeats are kept in `headers` but
            // do not affect framing.
            self.content_length = Some(parse_content_length(&value)?);
        }
        self.headers.push((name, value));
        Ok(())
    }

    fn start_body(&mut self, limits: &Limits) -> Result<(), StompError> {
        if let Some(len) = self.content_length {
            // Refuse an oversized announced body before buffering any of it.
            self.check_frame_size(limits, len.saturating_add(1))?;
        }
        self.phase = Phase::Body;
        self.scanned = 0;
        Ok(())
    }

    fn body_by_length(
        &mut self,
        src: &mut BytesMut,
        len: usize,
    ) -> Result<Option<Item>, StompError> {
        if src.len() <= len {
            return Ok(None);
        }
        if src[len] != b'\0' {
            return Err(StompError::MissingNul);
        }
        Ok(Some(self.finish(src, len)))
    }

    fn body_to_nul(
        &mut self,
        limits: &Limits,
        src: &mut BytesMut,
    ) -> Result<Option<Item>, StompError> {
        // Body and NUL must fit in what is left of max_frame.
        let room = limits.max_frame.saturating_sub(self.frame_len);
        let window = src.len().min(room);
        match memchr::memchr(b'\0', &src[self.scanned..window]) {
            Some(i) => {
                let nul = self.scanned + i;
                Ok(Some(self.finish(src, nul)))
            }
            None if src.len() >= room => Err(StompError::FrameTooLarge {
                limit: limits.max_frame,
            }),
            None => {
                self.scanned = window;
                Ok(None)
            }
        }
    }

    /// The body is `src[..body_len]` and `src[body_len]` is its NUL.
    fn finish(&mut self, src: &mut BytesMut, body_len: usize) -> Item {
        // split_to + freeze hands the body out without copying it.
        let body = src.split_to(body_len).freeze();
        src.advance(1);
        self.phase = Phase::Idle;
        self.scanned = 0;
        self.frame_len = 0;
        Item::Frame(Frame {
            command: self.command,
            headers: mem::take(&mut self.headers),
            body,
        })
    }
}

/// A decimal byte count: ASCII digits only (no sign, no spaces; STOMP 1.2 header values
/// are not trimmed), and it must fit in `usize`.
fn parse_content_length(value: &str) -> Result<usize, StompError> {
    let bad = || StompError::BadContentLength(snippet(value.as_bytes()));
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    value.parse().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_syntax() {
        assert_eq!(parse_content_length("0").unwrap(), 0);
        assert_eq!(parse_content_length("00703").unwrap(), 703);
        for bad in [
            "",
            "-1",
            "+1",
            " 1",
            "1 ",
            "0x10",
            "1e3",
            "99999999999999999999999",
        ] {
            assert!(
                matches!(
                    parse_content_length(bad),
                    Err(StompError::BadContentLength(_))
                ),
                "{bad:?}"
            );
        }
    }
}
