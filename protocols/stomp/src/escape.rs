//! STOMP 1.2 header escaping: `\r` `\n` `\c` (colon) `\\`.
//!
//! Applies to header names and values of every frame except CONNECT, STOMP and
//! CONNECTED (see [`Command::escapes_headers`](crate::Command::escapes_headers)). Any
//! other escape is a fatal protocol error per the spec.

use bytes::{BufMut, BytesMut};

use crate::error::{snippet, StompError};
use rpcmux_value::Str;

/// Turn raw header bytes (one name or one value, as on the wire) into text, decoding
/// escapes when `escaped` is set. Header text must be UTF-8 (spec: "commands and
/// headers are encoded in UTF-8").
pub(crate) fn unescape(raw: &[u8], escaped: bool) -> Result<Str, StompError> {
    if !escaped || memchr::memchr(b'\\', raw).is_none() {
        // Fast path: nearly every real header has no backslash, and is short enough to
        // be kept inline (no allocation).
        return std::str::from_utf8(raw)
            .map(Str::new)
            .map_err(|_| not_utf8(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        out.push(match bytes.next() {
            Some(b'r') => b'\r',
            Some(b'n') => b'\n',
            Some(b'c') => b':',
            Some(b'\\') => b'\\',
            Some(other) => return Err(StompError::BadEscape(snippet(&[b'\\', other]))),
            None => return Err(StompError::BadEscape(snippet(b"\\"))),
        });
    }
    // Escapes only produce ASCII and consume ASCII, so validating after decoding
    // accepts exactly the inputs that were UTF-8 before.
    String::from_utf8(out)
        .map(Str::from)
        .map_err(|e| not_utf8(e.as_bytes()))
}

fn not_utf8(bytes: &[u8]) -> StompError {
    StompError::BadHeader(format!("not UTF-8: {}", snippet(bytes)))
}

/// Byte classes, so that one pass over a header finds everything the codec cares about.
pub(crate) mod class {
    /// Written as an escape on output: backslash, LF, CR, colon.
    pub(crate) const ESCAPED: u8 = 1;
    /// Backslash: input may hold escapes to decode.
    pub(crate) const BACKSLASH: u8 = 2;
    /// CR or LF.
    pub(crate) const EOL: u8 = 4;
    pub(crate) const COLON: u8 = 8;
    pub(crate) const NUL: u8 = 16;

    pub(crate) static TABLE: [u8; 256] = {
        let mut t = [0u8; 256];
        t[b'\\' as usize] = ESCAPED | BACKSLASH;
        t[b'\n' as usize] = ESCAPED | EOL;
        t[b'\r' as usize] = ESCAPED | EOL;
        t[b':' as usize] = ESCAPED | COLON;
        t[0] = NUL;
        t
    };
}

/// The union of the classes of `bytes`.
pub(crate) fn classify(bytes: &[u8]) -> u8 {
    bytes
        .iter()
        .fold(0, |acc, &b| acc | class::TABLE[b as usize])
}

/// Append `text` to `dst`, escaped.
pub(crate) fn put_escaped(dst: &mut BytesMut, text: &str) {
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b':' => b"\\c",
            _ => continue,
        };
        dst.put_slice(&bytes[start..i]);
        dst.put_slice(esc);
        start = i + 1;
    }
    dst.put_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut b = BytesMut::new();
        put_escaped(&mut b, s);
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[test]
    fn classes() {
        use class::*;
        assert_eq!(classify(b"plain text"), 0);
        assert_eq!(classify(b"a:b"), ESCAPED | COLON);
        assert_eq!(classify(b"a\\b\r"), ESCAPED | BACKSLASH | EOL);
        assert_eq!(classify(b"\0\n"), NUL | ESCAPED | EOL);
    }

    #[test]
    fn spec_escapes_both_ways() {
        assert_eq!(esc("a:b\\c\r\nd"), r"a\cb\\c\r\nd");
        assert_eq!(unescape(br"a\cb\\c\r\nd", true).unwrap(), "a:b\\c\r\nd");
        assert_eq!(esc("plain"), "plain");
        assert_eq!(esc(""), "");
        for s in ["", "\\\\", "::", "\r\n\r", "é:ü\\", "x\\cy"] {
            assert_eq!(unescape(esc(s).as_bytes(), true).unwrap(), s);
        }
    }

    #[test]
    fn unescaped_frames_keep_backslashes() {
        assert_eq!(unescape(br"a\tb\c", false).unwrap(), r"a\tb\c");
    }

    #[test]
    fn undefined_escapes_are_errors() {
        for bad in [&br"\t"[..], br"ab\", br"\\\", br"\C", b"\\\xc3\xa9"] {
            assert!(
                matches!(unescape(bad, true), Err(StompError::BadEscape(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn invalid_utf8_is_bad_header() {
        assert!(matches!(
            unescape(b"\xff", false),
            Err(StompError::BadHeader(_))
        ));
        assert!(matches!(
            unescape(b"\\c\xff", true),
            Err(StompError::BadHeader(_))
        ));
    }
}
