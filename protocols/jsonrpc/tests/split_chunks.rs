//! The raw-TCP splitter gives the same answers however reads cut the stream: the same
//! seeded random streams (values, garbage lines, over-long garbage, over-long values,
//! whitespace, byte order marks) fed whole, byte by byte and in random pieces.

use fastrand::Rng;
use rpcmux_jsonrpc::{Split, Splitter};

#[derive(Debug, Clone, PartialEq)]
enum Out {
    Value(Vec<u8>),
    Garbage(Vec<u8>),
    TooLarge,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Outcomes in order, then how many bytes were consumed; driven as the server drives it.
fn run(stream: &[u8], cuts: &[usize], max: usize) -> (Vec<Out>, usize) {
    let mut sp = Splitter::new(max);
    let mut buf: Vec<u8> = Vec::new();
    let mut outs = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain([&stream.len()]) {
        buf.extend_from_slice(&stream[from..to]);
        from = to;
        loop {
            match sp.next(&buf) {
                Split::Value { start, end } => {
                    assert!(start < end && end <= buf.len());
                    assert!(end - start <= max, "value of {} over {max}", end - start);
                    assert!(matches!(buf[start], b'{' | b'['));
                    assert!(matches!(buf[end - 1], b'}' | b']'));
                    let lead = String::from_utf8_lossy(&buf[..start]).replace('\u{feff}', "");
                    assert!(lead.bytes().all(|b| b.is_ascii_whitespace()), "{lead:?}");
                    outs.push(Out::Value(buf[start..end].to_vec()));
                    buf.drain(..end);
                }
                Split::Garbage { skip } if skip > 0 => {
                    assert_eq!(buf[skip - 1], b'\n');
                    outs.push(Out::Garbage(buf[..skip].to_vec()));
                    buf.drain(..skip);
                }
                Split::Garbage { .. } | Split::Incomplete => break,
                Split::TooLarge => {
                    // And it stays so.
                    assert_eq!(sp.next(&buf), Split::TooLarge);
                    outs.push(Out::TooLarge);
                    return (outs, from - buf.len());
                }
            }
        }
    }
    (outs, from - buf.len())
}

fn text(rng: &mut Rng, len: usize) -> Vec<u8> {
    const BYTES: &[u8] = b"ab01 :,{}[]\"\\\t";
    (0..len).map(|_| BYTES[rng.usize(..BYTES.len())]).collect()
}

/// A value: nested arrays/objects with strings holding brackets, quotes and escapes.
fn value(rng: &mut Rng, out: &mut Vec<u8>, depth: usize) {
    let (open, close) = if rng.bool() {
        (b'{', b'}')
    } else {
        (b'[', b']')
    };
    out.push(open);
    for i in 0..rng.usize(..4) {
        if i > 0 {
            out.push(b',');
        }
        match rng.usize(..4) {
            0 if depth > 0 => value(rng, out, depth - 1),
            1 => {
                out.push(b'"');
                for _ in 0..rng.usize(..8) {
                    match rng.usize(..6) {
                        0 => out.extend_from_slice(b"\\\""),
                        1 => out.extend_from_slice(b"\\\\"),
                        2 => out.push(b'{'),
                        3 => out.push(b']'),
                        _ => out.push(b'x'),
                    }
                }
                out.push(b'"');
            }
            _ => out.extend_from_slice(rng.u32(..).to_string().as_bytes()),
        }
    }
    out.push(close);
}

fn stream(rng: &mut Rng, max: usize) -> Vec<u8> {
    let mut s = Vec::new();
    for _ in 0..rng.usize(1..12) {
        match rng.usize(..10) {
            0..=2 => value(rng, &mut s, 3),
            3 => {
                // A value longer than the cap.
                s.push(b'[');
                s.extend(vec![b'1'; max + rng.usize(..8)]);
                s.push(b']');
            }
            4 => {
                // A garbage line, maybe with `{` in it.
                s.push(b"x}]\"!\xEFa"[rng.usize(..7)]);
                let n = rng.usize(..max);
                s.extend(text(rng, n));
                s.push(b'\n');
            }
            5 => {
                // An over-long garbage line (newline or not).
                s.push(b'z');
                let n = max + rng.usize(..8);
                s.extend(
                    text(rng, n)
                        .into_iter()
                        .map(|b| if b == b'\n' { b'.' } else { b }),
                );
                if rng.bool() {
                    s.push(b'\n');
                }
            }
            6 => s.extend_from_slice(BOM),
            7 => s.extend_from_slice(&BOM[..rng.usize(1..3)]),
            8 => {
                let n = rng.usize(..max + 4);
                s.extend((0..n).map(|_| b" \t\r\n"[rng.usize(..4)]));
            }
            _ => s.push(b'\n'),
        }
    }
    s
}

#[test]
fn chunking_never_changes_what_a_stream_gives() {
    let mut rng = Rng::with_seed(0xC0FF_EE11);
    let mut kinds = [0usize; 3];
    for _ in 0..3000 {
        let max = rng.usize(8..64);
        let s = stream(&mut rng, max);
        let whole = run(&s, &[], max);
        for o in &whole.0 {
            kinds[match o {
                Out::Value(_) => 0,
                Out::Garbage(_) => 1,
                Out::TooLarge => 2,
            }] += 1;
        }
        let bytewise: Vec<usize> = (1..s.len()).collect();
        assert_eq!(run(&s, &bytewise, max), whole, "byte by byte: {s:?}");
        for _ in 0..4 {
            let mut cuts: Vec<usize> = (0..rng.usize(..8)).map(|_| rng.usize(..=s.len())).collect();
            cuts.sort_unstable();
            assert_eq!(run(&s, &cuts, max), whole, "cut at {cuts:?}: {s:?}");
        }
    }
    // The generator reaches every outcome often.
    assert!(kinds.iter().all(|&n| n > 300), "{kinds:?}");
}

#[test]
fn an_over_long_garbage_line_is_too_large_in_any_chunking() {
    let max = 8;
    let line = b"xxxxxxxxxxxx\n{}".to_vec();
    assert_eq!(run(&line, &[], max).0, [Out::TooLarge]);
    assert_eq!(run(&line, &[3, 9], max).0, [Out::TooLarge]);
    // Exactly max bytes before the newline is fine.
    let ok = b"xxxxxxxx\n{}".to_vec();
    let want = (
        vec![
            Out::Garbage(b"xxxxxxxx\n".to_vec()),
            Out::Value(b"{}".to_vec()),
        ],
        11,
    );
    assert_eq!(run(&ok, &[], max), want);
    assert_eq!(run(&ok, &[1, 2, 8], max), want);
}

#[test]
fn byte_order_marks_before_a_value_are_skipped() {
    let s = b"\xEF\xBB\xBF{\"a\":1}\n\xEF\xBB\xBF [2]".to_vec();
    let want = vec![
        Out::Value(b"{\"a\":1}".to_vec()),
        Out::Value(b"[2]".to_vec()),
    ];
    for cuts in [vec![], vec![1], vec![2], vec![1, 2, 3], vec![12, 13, 14]] {
        assert_eq!(run(&s, &cuts, 64), (want.clone(), s.len()), "{cuts:?}");
    }
    // A broken mark is garbage, skipped through its line.
    let s = b"\xEF\xBBx{}\n[]".to_vec();
    let want = vec![
        Out::Garbage(b"\xEF\xBBx{}\n".to_vec()),
        Out::Value(b"[]".to_vec()),
    ];
    assert_eq!(run(&s, &[1], 64), (want, s.len()));
    // Endless whitespace is capped like a value.
    assert_eq!(run(&[b' '; 100], &[10, 50], 64).0, [Out::TooLarge]);
    assert_eq!(run(&[b' '; 64], &[], 64), (vec![], 0));
}
