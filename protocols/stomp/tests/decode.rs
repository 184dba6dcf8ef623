//! Decoding: valid frames in every shape, every error, caps enforced while reading.

mod common;

use bytes::BytesMut;
use common::{decode_all, decode_every_way, decode_in_pieces};
use rpcmux_stomp::{Command, Frame, Item, Limits, StompCodec, StompError};
use tokio_util::codec::Decoder;

fn only_frame(input: &[u8]) -> Frame {
    let out = decode_every_way(input, Limits::default());
    assert_eq!(out.error, None, "{:?}", String::from_utf8_lossy(input));
    let frames = out.frames();
    assert_eq!(frames.len(), 1);
    frames[0].clone()
}

/// The first error decoding `input` (whole) under `limits`.
fn error_of(input: &[u8], limits: Limits) -> StompError {
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::from(input);
    loop {
        match codec.decode(&mut buf) {
            Ok(Some(_)) => continue,
            Ok(None) => match codec.decode_eof(&mut buf) {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("no error for {:?}", String::from_utf8_lossy(input)),
                Err(e) => return e,
            },
            Err(e) => {
                // Every split of the input reports the same error.
                let again = decode_every_way(input, limits);
                assert_eq!(again.error, Some(e.to_string()));
                return e;
            }
        }
    }
}

fn h(f: &Frame) -> Vec<(&str, &str)> {
    f.headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect()
}

// ---------------------------------------------------------------- valid frames

#[test]
fn nul_terminated_frame() {
    let f = only_frame(b"SEND\ndestination:/q/a\nreceipt:77\n\nhello\0");
    assert_eq!(f.command, Command::Send);
    assert_eq!(h(&f), [("destination", "/q/a"), ("receipt", "77")]);
    assert_eq!(&f.body[..], b"hello");
}

#[test]
fn content_length_frame_with_binary_body() {
    let mut body: Vec<u8> = (0..=255).collect();
    body.extend_from_slice(b"\0\0\n\r\n\0");
    let mut input = format!("SEND\ndestination:b\ncontent-length:{}\n\n", body.len()).into_bytes();
    input.extend_from_slice(&body);
    input.push(0);
    let f = only_frame(&input);
    assert_eq!(&f.body[..], &body[..]);
    assert_eq!(f.get("content-length"), Some("262"));
}

#[test]
fn empty_bodies_and_no_headers() {
    let f = only_frame(b"DISCONNECT\n\n\0");
    assert_eq!(
        (f.command, f.headers.len(), f.body.len()),
        (Command::Disconnect, 0, 0)
    );
    let f = only_frame(b"SEND\ncontent-length:0\n\n\0");
    assert!(f.body.is_empty());
    let f = only_frame(b"SEND\nempty:\n\n\0");
    assert_eq!(f.get("empty"), Some(""));
}

#[test]
fn crlf_lines_equal_lf_lines() {
    let lf = only_frame(b"SUBSCRIBE\nid:0\ndestination:/q\n\n\0");
    let crlf = only_frame(b"SUBSCRIBE\r\nid:0\r\ndestination:/q\r\n\r\n\0");
    let mixed = only_frame(b"SUBSCRIBE\r\nid:0\ndestination:/q\r\n\n\0");
    assert_eq!(lf, crlf);
    assert_eq!(lf, mixed);
    // The body is never touched: CRLF inside it stays.
    let f = only_frame(b"SEND\r\n\r\na\r\nb\0");
    assert_eq!(&f.body[..], b"a\r\nb");
}

#[test]
fn every_command_decodes() {
    for c in Command::ALL {
        let f = only_frame(format!("{c}\n\n\0").as_bytes());
        assert_eq!(f.command, c);
    }
}

#[test]
fn repeated_headers_first_wins() {
    let f = only_frame(b"MESSAGE\nfoo:World\nfoo:Hello\n\n\0");
    assert_eq!(f.get("foo"), Some("World"));
    assert_eq!(h(&f), [("foo", "World"), ("foo", "Hello")]);
    // content-length too: the first one frames the body, later ones are ignored even
    // when they are garbage.
    let f = only_frame(b"SEND\ncontent-length:3\ncontent-length:5\ncontent-length:x\n\na\0c\0");
    assert_eq!(&f.body[..], b"a\0c");
}

#[test]
fn escapes_decoded_except_on_connect_frames() {
    let f = only_frame(b"SEND\na\\cb:c\\\\d\\re\\nf\\c\n\n\0");
    assert_eq!(f.get("a:b"), Some("c\\d\re\nf:"));
    for cmd in ["CONNECT", "STOMP", "CONNECTED"] {
        let f = only_frame(format!("{cmd}\nlogin:a\\c\npasscode:pa:ss\\t\n\n\0").as_bytes());
        assert_eq!(f.get("login"), Some("a\\c"), "{cmd}");
        assert_eq!(f.get("passcode"), Some("pa:ss\\t"), "{cmd}");
    }
}

#[test]
fn utf8_headers() {
    let f = only_frame("SEND\nclé:välue ✓\n\n\0".as_bytes());
    assert_eq!(f.get("clé"), Some("välue ✓"));
}

#[test]
fn heartbeats_between_and_after_frames() {
    let out = decode_every_way(
        b"\n\r\nCONNECT\naccept-version:1.2\n\n\0\n\nSEND\n\nx\0\r\n\n",
        Limits::default(),
    );
    assert_eq!(out.error, None);
    use Item::Heartbeat as H;
    let kinds: Vec<_> = out
        .items
        .iter()
        .map(|i| match i {
            Item::Heartbeat => "hb".to_string(),
            Item::Frame(f) => f.command.to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        ["hb", "hb", "CONNECT", "hb", "hb", "SEND", "hb", "hb"]
    );
    assert_eq!(out.items[0], H);
}

#[test]
fn several_frames_in_one_buffer() {
    let mut input = Vec::new();
    for i in 0..100 {
        input.extend_from_slice(format!("SEND\ndestination:/q/{i}\n\nbody {i}\0").as_bytes());
        if i % 3 == 0 {
            input.extend_from_slice(b"\n");
        }
        input.extend_from_slice(b"ACK\r\nid:1\r\n\r\n\0");
    }
    let out = decode_every_way(&input, Limits::default());
    assert_eq!(out.error, None);
    let frames = out.frames();
    assert_eq!(frames.len(), 200);
    assert_eq!(out.heartbeats(), 34);
    assert_eq!(frames[198].get("destination"), Some("/q/99"));
    assert_eq!(&frames[198].body[..], b"body 99");
}

#[test]
fn limits_exactly_at_the_cap_pass() {
    let limits = Limits {
        max_frame: 64,
        max_headers: 2,
        max_header_line: 10,
    };
    // 1 + 12 + 12 + 1 + body + NUL: exactly 64 bytes of frame.
    let head = b"S\nabcde:1234\nfghij:5678\n\n";
    assert_eq!(head.len(), 25);
    let head = [&b"SEND"[..], &head[1..]].concat();
    let body = vec![b'x'; 64 - head.len() - 1];
    let input = [&head[..], &body, b"\0"].concat();
    assert_eq!(input.len(), 64);
    let out = decode_every_way(&input, limits);
    assert_eq!(out.error, None);
    assert_eq!(out.frames().len(), 1);
    // One more body byte is over.
    let input = [&head[..], &body, b"x\0"].concat();
    assert_eq!(
        decode_every_way(&input, limits).error.unwrap(),
        "frame too large (limit 64 bytes)"
    );
}

// ---------------------------------------------------------------- prefixes

const VALID: &[&[u8]] = &[
    b"CONNECT\naccept-version:1.2\nhost:h\n\n\0",
    b"\r\nSTOMP\r\naccept-version:1.2\r\n\r\n\0\r\n",
    b"SEND\ndestination:a\\cb\ncontent-length:4\n\n\0\n\0\r\0",
    b"SEND\ndestination:x\n\nbody\n\0\n\n",
    b"MESSAGE\nsubscription:0\nmessage-id:1\n\n{}\0",
];

#[test]
fn every_prefix_is_incomplete_not_an_error() {
    for full in VALID {
        let whole = decode_all(full);
        assert_eq!(whole.error, None);
        for n in 0..full.len() {
            let mut codec = StompCodec::default();
            let mut buf = BytesMut::from(&full[..n]);
            let mut items = Vec::new();
            while let Some(item) = codec.decode(&mut buf).expect("prefix is not an error") {
                items.push(item);
            }
            assert!(whole.items.starts_with(&items), "prefix {n} of {full:?}");
            // Closing here: fine between frames, UnexpectedEof inside one (a lone CR
            // counts as inside: half a CRLF).
            let clean = codec.is_between_frames() && buf.is_empty();
            match codec.decode_eof(&mut buf) {
                Ok(None) => assert!(clean),
                Err(StompError::UnexpectedEof) => assert!(!clean),
                other => panic!("prefix {n} of {full:?}: {other:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------- errors

fn lim() -> Limits {
    Limits::default()
}

#[test]
fn bad_commands() {
    for input in [
        &b"FOO\n\n\0"[..],
        b"send\n\n\0",
        b"SEND \n\n\0",
        b"CONNECTED2\n\n\0",
        b"\rX",
        b"SEND\0",
        b"\x00",
    ] {
        assert!(
            matches!(error_of(input, lim()), StompError::BadCommand(_)),
            "{input:?}"
        );
    }
}

#[test]
fn long_garbage_is_refused_without_waiting_for_a_newline() {
    // An HTTP request line never reaches its LF within 13 bytes.
    let mut codec = StompCodec::default();
    let mut buf = BytesMut::from(&b"POST /RPC2 HTTP/1.1"[..]);
    let e = codec.decode(&mut buf).unwrap_err();
    assert_eq!(e.to_string(), r#"unknown command "POST /RPC2 H""#);
}

#[test]
fn bad_headers() {
    for input in [
        &b"SEND\nnocolon\n\n\0"[..],
        b"SEND\n:empty-name\n\n\0",
        b"SEND\na:b\rc\n\n\0",
        b"SEND\na\r:b\n\n\0",
        b"SEND\na:\xff\n\n\0",
        b"CONNECT\nlogin:\xc3\n\n\0",
        b"DISCONNECT\n\0",
        b"SEND\ndestination:/q\0\n\n\0",
    ] {
        assert!(
            matches!(error_of(input, lim()), StompError::BadHeader(_)),
            "{input:?}"
        );
    }
}

#[test]
fn bad_escapes() {
    for input in [
        &b"SEND\na:\\t\n\n\0"[..],
        b"SEND\na\\x:b\n\n\0",
        b"MESSAGE\na:b\\\n\n\0",
        b"ERROR\nmessage:\\C\n\n\0",
    ] {
        assert!(
            matches!(error_of(input, lim()), StompError::BadEscape(_)),
            "{input:?}"
        );
    }
}

#[test]
fn bad_content_length() {
    for cl in ["-1", "abc", " 5", "5 ", "", "1.0", "18446744073709551616"] {
        let input = format!("SEND\ncontent-length:{cl}\n\nxxxxx\0");
        assert!(
            matches!(
                error_of(input.as_bytes(), lim()),
                StompError::BadContentLength(_)
            ),
            "{cl:?}"
        );
    }
}

#[test]
fn missing_nul_after_content_length() {
    let e = error_of(b"SEND\ncontent-length:2\n\nabc\0", lim());
    assert!(matches!(e, StompError::MissingNul));
}

#[test]
fn truncated_at_eof() {
    for input in [
        &b"SEND"[..],
        b"SEND\n",
        b"SEND\na:b\n\n",
        b"SEND\ncontent-length:5\n\nab",
        b"\r",
    ] {
        let e = error_of(input, lim());
        assert!(matches!(e, StompError::UnexpectedEof), "{input:?}: {e}");
    }
    // A clean close between frames is not an error.
    assert_eq!(decode_all(b"SEND\n\n\0\n").error, None);
}

#[test]
fn poisoned_after_an_error() {
    let mut codec = StompCodec::default();
    let mut buf = BytesMut::from(&b"BAD\n\n\0"[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(StompError::BadCommand(_))
    ));
    buf.clear();
    buf.extend_from_slice(b"SEND\n\n\0");
    assert!(matches!(codec.decode(&mut buf), Err(StompError::Poisoned)));
    assert!(matches!(
        codec.decode_eof(&mut buf),
        Err(StompError::Poisoned)
    ));
}

#[test]
fn too_many_headers() {
    let limits = Limits {
        max_headers: 3,
        ..lim()
    };
    assert!(decode_every_way(b"SEND\na:1\na:2\na:3\n\n\0", limits)
        .error
        .is_none());
    assert!(matches!(
        error_of(b"SEND\na:1\na:2\na:3\na:4\n\n\0", limits),
        StompError::TooManyHeaders { limit: 3 }
    ));
    // Default cap: 64.
    let mut input = b"SEND\n".to_vec();
    for i in 0..65 {
        input.extend_from_slice(format!("h{i}:v\n").as_bytes());
    }
    input.extend_from_slice(b"\n\0");
    assert!(matches!(
        error_of(&input, lim()),
        StompError::TooManyHeaders { limit: 64 }
    ));
}

#[test]
fn header_too_long_detected_before_its_newline() {
    let limits = Limits {
        max_header_line: 10,
        ..lim()
    };
    assert!(decode_every_way(b"SEND\nabcde:1234\n\n\0", limits)
        .error
        .is_none());
    assert!(decode_every_way(b"SEND\nabcde:1234\r\n\r\n\0", limits)
        .error
        .is_none());
    assert!(matches!(
        error_of(b"SEND\nabcde:12345\n\n\0", limits),
        StompError::HeaderTooLong { limit: 10 }
    ));
    // No LF ever comes: refused once 12 bytes of the line are in.
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::from(&b"SEND\nabcde:12345"[..]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    buf.extend_from_slice(b"6");
    assert!(matches!(
        codec.decode(&mut buf),
        Err(StompError::HeaderTooLong { limit: 10 })
    ));
}

#[test]
fn announced_oversized_body_refused_before_it_arrives() {
    let limits = Limits {
        max_frame: 1000,
        ..lim()
    };
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::from(&b"SEND\ncontent-length:100000000\n\n"[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(StompError::FrameTooLarge { limit: 1000 })
    ));
    let mut codec = StompCodec::default();
    let mut buf = BytesMut::from(&b"SEND\ncontent-length:16777216\n\n"[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(StompError::FrameTooLarge { .. })
    ));
}

#[test]
fn headers_count_toward_the_frame_cap() {
    let limits = Limits {
        max_frame: 30,
        ..lim()
    };
    assert!(matches!(
        error_of(b"SEND\naaaaaaaaaa:1\nbbbbbbbbbb:2\n\n\0", limits),
        StompError::FrameTooLarge { limit: 30 }
    ));
}

/// A client streaming an endless body with no NUL (100 MB and more) is cut off as
/// soon as it passes the cap; the buffer never holds much more than the cap.
#[test]
fn endless_body_cut_off_at_the_cap() {
    let limits = Limits::default();
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::from(&b"SEND\ndestination:/q\n\n"[..]);
    let chunk = vec![b'A'; 64 * 1024];
    let mut fed = buf.len();
    let err = loop {
        match codec.decode(&mut buf) {
            Ok(None) => {}
            Ok(Some(item)) => panic!("unexpected {item:?}"),
            Err(e) => break e,
        }
        assert!(fed < 100_000_000, "never refused");
        buf.extend_from_slice(&chunk);
        fed += chunk.len();
    };
    assert!(matches!(err, StompError::FrameTooLarge { .. }));
    assert!(fed > limits.max_frame && fed <= limits.max_frame + chunk.len());
    assert!(buf.len() <= limits.max_frame + chunk.len());
}

#[test]
fn endless_header_line_cut_off_at_the_cap() {
    let mut codec = StompCodec::default();
    let mut buf = BytesMut::from(&b"SEND\nx:"[..]);
    let mut fed = buf.len();
    let err = loop {
        match codec.decode(&mut buf) {
            Ok(None) => {}
            Ok(Some(item)) => panic!("unexpected {item:?}"),
            Err(e) => break e,
        }
        assert!(fed < 1_000_000, "never refused");
        buf.extend_from_slice(&[b'v'; 100]);
        fed += 100;
    };
    assert!(matches!(err, StompError::HeaderTooLong { limit: 8192 }));
    assert!(fed <= 5 + 8192 + 2 + 100);
}

// ---------------------------------------------------------------- O(n)

/// Byte-at-a-time delivery must not rescan the buffer: 1 MiB one byte per call would
/// take minutes if each call searched from the start (5·10¹¹ byte checks).
#[test]
fn byte_at_a_time_is_linear() {
    let body = vec![b'b'; 1 << 20];
    let long_value = "v".repeat(1 << 20);
    let limits = Limits {
        max_frame: 4 << 20,
        max_headers: 64,
        max_header_line: 2 << 20,
    };
    let input = [b"SEND\nlong:", long_value.as_bytes(), b"\n\n", &body, b"\0"].concat();
    let start = std::time::Instant::now();
    let out = decode_in_pieces(&input, limits, &[1]);
    let took = start.elapsed();
    assert_eq!(out.error, None);
    assert_eq!(out.frames()[0].body.len(), 1 << 20);
    assert_eq!(out.frames()[0].get("long").unwrap().len(), 1 << 20);
    assert!(took.as_secs() < 20, "byte-by-byte decode took {took:?}");
}
