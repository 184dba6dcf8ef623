//! Writing frames.

use bytes::{BufMut, BytesMut};

use crate::error::{snippet, StompError};
use crate::escape::{class, classify, put_escaped};
use crate::Frame;

/// A heart-beat on the wire: one LF (what stomp.py and most brokers send).
pub const HEARTBEAT: &[u8] = b"\n";

/// Append `frame` to `dst`.
///
/// - Lines end in LF (never CRLF: shorter, and every 1.2 peer must accept it).
/// - Header names and values are escaped, except on CONNECT / STOMP / CONNECTED where
///   the spec forbids escaping; there a name containing CR, LF or `:` or a value
///   containing CR or LF cannot be written and is refused with
///   [`StompError::BadHeader`] rather than sent as a corrupt frame.
/// - `content-length` always states the body's true length, so bodies may hold NULs:
///   it is written in place of the first `content-length` among `frame.headers` (any
///   value there is replaced: the body is the truth, e.g. when a decoded frame is
///   re-sent with a new body), else appended after the headers when the body is not
///   empty. Further `content-length` headers are dropped.
/// - Empty header names are refused (the grammar requires at least one byte), and so
///   is a NUL anywhere in a header: NUL ends a frame, so this decoder (and stomp.py,
///   and most peers) would read it as a truncated frame.
///
/// On error `dst` is left as it was.
pub fn encode_frame(frame: &Frame, dst: &mut BytesMut) -> Result<(), StompError> {
    let start = dst.len();
    let result = write_frame(frame, dst);
    if result.is_err() {
        // Validation happens while writing (one pass over each header); roll back.
        dst.truncate(start);
    }
    result
}

/// Append the head of a frame whose body of `body_len` bytes the caller writes next,
/// followed by the NUL that ends the frame: the command, the headers as
/// [`encode_frame`] writes them (`content-length` stating `body_len`) and the blank
/// line. `frame.body` is ignored. For a body that several frames carry alike (a server
/// sending one message to many subscriptions keeps one copy of it).
///
/// On error `dst` is left as it was.
pub fn encode_frame_head(
    frame: &Frame,
    body_len: usize,
    dst: &mut BytesMut,
) -> Result<(), StompError> {
    let start = dst.len();
    let result = write_head(frame, body_len, dst);
    if result.is_err() {
        dst.truncate(start);
    }
    result
}

fn write_frame(frame: &Frame, dst: &mut BytesMut) -> Result<(), StompError> {
    dst.reserve(frame.body.len() + 1);
    write_head(frame, frame.body.len(), dst)?;
    dst.put_slice(&frame.body);
    dst.put_u8(b'\0');
    Ok(())
}

fn write_head(frame: &Frame, body_len: usize, dst: &mut BytesMut) -> Result<(), StompError> {
    let escape = frame.command.escapes_headers();
    let command = frame.command.as_str();
    let mut digits = [0u8; 20];
    let digits = decimal(body_len as u64, &mut digits);

    // Reserve once for the unescaped size; escapes are rare and grow `dst` if needed.
    let headers: usize = frame
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.len() + 2)
        .sum();
    let length_line = CONTENT_LENGTH.len() + digits.len() + 2;
    dst.reserve(command.len() + 1 + headers + length_line + 1);

    dst.put_slice(command.as_bytes());
    dst.put_u8(b'\n');
    let mut length_written = false;
    for (name, value) in &frame.headers {
        if name == CONTENT_LENGTH {
            if !length_written {
                put_length(dst, digits);
                length_written = true;
            }
            continue;
        }
        let (name_class, value_class) = (classify(name.as_bytes()), classify(value.as_bytes()));
        check_header(name, value, name_class, value_class, escape)?;
        put_text(dst, name, escape && name_class & class::ESCAPED != 0);
        dst.put_u8(b':');
        put_text(dst, value, escape && value_class & class::ESCAPED != 0);
        dst.put_u8(b'\n');
    }
    if !length_written && body_len > 0 {
        put_length(dst, digits);
    }
    dst.put_u8(b'\n');
    Ok(())
}

fn put_text(dst: &mut BytesMut, text: &str, escape: bool) {
    if escape {
        put_escaped(dst, text);
    } else {
        dst.put_slice(text.as_bytes());
    }
}

fn put_length(dst: &mut BytesMut, digits: &[u8]) {
    dst.put_slice(CONTENT_LENGTH.as_bytes());
    dst.put_u8(b':');
    dst.put_slice(digits);
    dst.put_u8(b'\n');
}

/// Append one heart-beat EOL to `dst`.
pub fn encode_heartbeat(dst: &mut BytesMut) {
    dst.put_slice(HEARTBEAT);
}

const CONTENT_LENGTH: &str = "content-length";

fn check_header(
    name: &str,
    value: &str,
    name_class: u8,
    value_class: u8,
    escape: bool,
) -> Result<(), StompError> {
    if name.is_empty() {
        return Err(StompError::BadHeader("empty header name".into()));
    }
    if (name_class | value_class) & class::NUL != 0 {
        return Err(StompError::BadHeader(format!(
            "NUL in header {}",
            snippet(name.as_bytes())
        )));
    }
    if !escape && (name_class & (class::EOL | class::COLON) != 0 || value_class & class::EOL != 0) {
        return Err(StompError::BadHeader(format!(
            "{} cannot be sent unescaped in a CONNECT/STOMP/CONNECTED frame",
            snippet(format!("{name}:{value}").as_bytes())
        )));
    }
    Ok(())
}

/// `n` in decimal, written into the tail of `buf` (no allocation on the hot path).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Command;

    fn enc(f: &Frame) -> Vec<u8> {
        let mut b = BytesMut::new();
        encode_frame(f, &mut b).unwrap();
        b.to_vec()
    }

    #[test]
    fn decimal_digits() {
        let mut b = [0; 20];
        assert_eq!(decimal(0, &mut b), b"0");
        assert_eq!(decimal(703, &mut b), b"703");
        assert_eq!(decimal(u64::MAX, &mut b), b"18446744073709551615");
    }

    #[test]
    fn exact_bytes() {
        let f = Frame::new(Command::Message)
            .header("destination", "a:b")
            .with_body(&b"x\0y"[..]);
        assert_eq!(
            enc(&f),
            b"MESSAGE\ndestination:a\\cb\ncontent-length:3\n\nx\0y\0"
        );
        // An existing content-length keeps its place, with the true length; repeats go.
        let f = Frame::new(Command::Send)
            .header("content-length", "999")
            .header("a", "b")
            .header("content-length", "7")
            .with_body("xy");
        assert_eq!(enc(&f), b"SEND\ncontent-length:2\na:b\n\nxy\0");
        let f = Frame::new(Command::Send).header("content-length", "5");
        assert_eq!(enc(&f), b"SEND\ncontent-length:0\n\n\0");
        assert_eq!(enc(&Frame::new(Command::Disconnect)), b"DISCONNECT\n\n\0");
    }

    #[test]
    fn a_head_and_its_body_make_the_whole_frame() {
        let f = Frame::new(Command::Message)
            .header("destination", "a:b")
            .with_body(&b"x\0y"[..]);
        let mut split = BytesMut::new();
        encode_frame_head(&f, f.body.len(), &mut split).unwrap();
        split.extend_from_slice(&f.body);
        split.extend_from_slice(b"\0");
        assert_eq!(split, enc(&f));
    }

    #[test]
    fn connect_is_not_escaped() {
        let f = Frame::new(Command::Connected).header("server", "a:b\\c");
        assert_eq!(enc(&f), b"CONNECTED\nserver:a:b\\c\n\n\0");
    }

    #[test]
    fn unrepresentable_connect_headers_refused_and_nothing_written() {
        for (n, v) in [("a:b", "v"), ("a", "x\ny"), ("a\r", "v"), ("", "v")] {
            let f = Frame::new(Command::Connect).header(n, v);
            let mut b = BytesMut::from(&b"keep"[..]);
            assert!(matches!(
                encode_frame(&f, &mut b),
                Err(StompError::BadHeader(_))
            ));
            assert_eq!(&b[..], b"keep");
        }
        for (n, v) in [("", "v"), ("a\0", "v"), ("a", "\0")] {
            let f = Frame::new(Command::Send).header(n, v);
            assert!(encode_frame(&f, &mut BytesMut::new()).is_err());
        }
    }
}
