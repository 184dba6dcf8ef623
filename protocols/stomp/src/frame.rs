//! The frame model: a command, ordered headers, a body.

use bytes::Bytes;

use crate::Command;
use rpcmux_value::Str;

/// One STOMP frame.
///
/// Headers are kept in wire order, repeats included, already unescaped (for the frames
/// that use escaping). Use [`Frame::get`] to read one: per the spec only the first
/// occurrence of a repeated header counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// What the frame does.
    pub command: Command,
    /// `(name, value)` pairs, unescaped, in wire order.
    pub headers: Vec<(Str, Str)>,
    /// The payload (a JSON-RPC message for rpcmux), shared, not copied.
    pub body: Bytes,
}

impl Frame {
    /// A frame with no headers and an empty body.
    pub fn new(command: Command) -> Frame {
        Frame {
            command,
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// Builder: append a header (after any already present).
    #[must_use]
    pub fn header(mut self, name: impl Into<Str>, value: impl Into<Str>) -> Frame {
        self.push_header(name, value);
        self
    }

    /// Builder: set the body. The encoder writes a matching `content-length`.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Frame {
        self.body = body.into();
        self
    }

    /// Append a header in place.
    pub fn push_header(&mut self, name: impl Into<Str>, value: impl Into<Str>) {
        self.headers.push((name.into(), value.into()));
    }

    /// The value of the first header called `name` (exact, case-sensitive match: STOMP
    /// header names are case-sensitive). Later repeats are ignored, as the spec requires.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the decoder yields: a frame, or a heart-beat.
///
/// Every EOL (`\n` or `\r\n`) seen between frames is reported as one heart-beat. The
/// spec also allows EOLs after a frame's NUL as padding; the two cannot be told apart on
/// the wire, and both only mean "the peer is alive", so both are `Heartbeat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A whole frame.
    Frame(Frame),
    /// An EOL between frames.
    Heartbeat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_header_wins() {
        let f = Frame::new(Command::Send)
            .header("destination", "/a")
            .header("destination", "/b")
            .with_body("x");
        assert_eq!(f.get("destination"), Some("/a"));
        assert_eq!(f.get("Destination"), None);
        assert_eq!(f.headers.len(), 2);
        assert_eq!(&f.body[..], b"x");
    }
}
