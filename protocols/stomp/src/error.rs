//! Decode and encode errors.
//!
//! STOMP has no way to resynchronise a byte stream after a malformed frame, so every
//! decode error is fatal to the connection: the server answers with an ERROR frame
//! (see [`StompError::error_frame`]) and closes. `Display` is written for that frame's
//! `message` header: one short line, client bytes quoted and truncated.

use std::{fmt, io};

use crate::{Command, Frame};

/// Everything that can go wrong reading or writing STOMP frames.
#[derive(Debug)]
#[non_exhaustive]
pub enum StompError {
    /// The underlying transport failed (from `FramedRead`/`FramedWrite`).
    Io(io::Error),
    /// A frame passed [`Limits::max_frame`](crate::Limits::max_frame) bytes.
    FrameTooLarge {
        /// The cap that was passed.
        limit: usize,
    },
    /// A frame had more than [`Limits::max_headers`](crate::Limits::max_headers) headers.
    TooManyHeaders {
        /// The cap that was passed.
        limit: usize,
    },
    /// A header line passed [`Limits::max_header_line`](crate::Limits::max_header_line).
    HeaderTooLong {
        /// The cap that was passed.
        limit: usize,
    },
    /// The command line is not a STOMP command (the quoted start of the line).
    BadCommand(String),
    /// A header line is malformed: no colon, empty name, not UTF-8, stray CR or NUL;
    /// or, when encoding, a header that cannot be written in this frame.
    BadHeader(String),
    /// A backslash escape other than `\c \n \r \\` (the quoted escape).
    BadEscape(String),
    /// `content-length` is not a decimal byte count (the quoted value).
    BadContentLength(String),
    /// The body announced by `content-length` was not followed by a NUL.
    MissingNul,
    /// The stream ended in the middle of a frame.
    UnexpectedEof,
    /// `decode` was called again after it returned an error: the stream is out of
    /// step and nothing after the bad frame can be trusted.
    Poisoned,
}

impl StompError {
    /// An ERROR frame reporting this error, with `message` set to the `Display` text
    /// (the encoder escapes it). Add `receipt-id` etc. with [`Frame::header`].
    pub fn error_frame(&self) -> Frame {
        Frame::new(Command::Error)
            .header("message", self.to_string())
            .header("content-type", "text/plain")
            .with_body(format!("{self}\n"))
    }
}

impl fmt::Display for StompError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StompError::Io(e) => write!(f, "i/o error: {e}"),
            StompError::FrameTooLarge { limit } => {
                write!(f, "frame too large (limit {limit} bytes)")
            }
            StompError::TooManyHeaders { limit } => {
                write!(f, "too many headers (limit {limit})")
            }
            StompError::HeaderTooLong { limit } => {
                write!(f, "header line too long (limit {limit} bytes)")
            }
            StompError::BadCommand(s) => write!(f, "unknown command {s}"),
            StompError::BadHeader(s) => write!(f, "malformed header: {s}"),
            StompError::BadEscape(s) => write!(f, "undefined escape sequence {s} in header"),
            StompError::BadContentLength(s) => write!(f, "invalid content-length {s}"),
            StompError::MissingNul => {
                f.write_str("frame body not terminated by NUL after content-length bytes")
            }
            StompError::UnexpectedEof => f.write_str("connection closed in the middle of a frame"),
            StompError::Poisoned => f.write_str("stream unusable after an earlier frame error"),
        }
    }
}

impl std::error::Error for StompError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StompError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for StompError {
    fn from(e: io::Error) -> StompError {
        StompError::Io(e)
    }
}

/// Client bytes quoted for an error message: lossy UTF-8, at most 40 characters, control
/// characters escaped by `{:?}` so the text stays one printable line.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    const MAX: usize = 40;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX * 4)]);
    let mut cut: String = text.chars().take(MAX).collect();
    if cut.len() < text.len() || bytes.len() > MAX * 4 {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_is_quoted_short_and_one_line() {
        assert_eq!(snippet(b"FOO\r"), r#""FOO\r""#);
        let long = snippet(&[b'A'; 1000]);
        assert!(long.chars().count() < 50, "{long}");
        assert!(!snippet(b"a\nb\0\xff").contains('\n'));
    }

    #[test]
    fn error_frame_carries_message() {
        let f = StompError::FrameTooLarge { limit: 10 }.error_frame();
        assert_eq!(f.command, Command::Error);
        assert_eq!(f.get("message"), Some("frame too large (limit 10 bytes)"));
    }
}
