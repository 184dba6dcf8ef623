//! Property-style round trips: random values, written then read back, come out equal.
//! (A small deterministic generator instead of proptest keeps the build light.)

use rpcmux_value::RpcError;
use rpcmux_value::{DateTime, Map, Value};
use rpcmux_xmlrpc::{
    check_xml_chars, parse_call, parse_response, try_write_call, try_write_response, write_call,
    write_response, Limits,
};

mod common;
use fastrand::Rng;

/// Characters that stress escaping and decoding: markup, entities-lookalikes, CR/LF,
/// whitespace at the edges, multi-byte UTF-8 (0xEF-led U+FFFD and U+FF41 next to the
/// forbidden U+FFFE), DEL. The characters XML 1.0 cannot carry (other C0 controls,
/// U+FFFE, U+FFFF) are in `forbidden_characters_never_round_trip_silently`.
const CHARS: &[char] = &[
    'a', 'Z', '0', ' ', '<', '>', '&', ';', '#', '"', '\'', '\r', '\n', '\t', '\u{7f}', 'é', '☃',
    '𝄞', '\u{fffd}', '\u{ff41}', ']', '/', '=',
];

fn string(rng: &mut Rng) -> String {
    (0..rng.usize(..12))
        .map(|_| CHARS[rng.usize(..CHARS.len())])
        .collect()
}

fn value(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth == 0 { 7 } else { 9 };
    match rng.usize(..kinds) {
        0 => Value::Nil,
        1 => Value::Bool(rng.u64(..) & 1 == 1),
        2 => match rng.usize(..3) {
            0 => Value::Int(rng.u64(..) as i64),
            1 => Value::Int(rng.u64(..) as i32 as i64),
            _ => Value::Int(rng.usize(..100) as i64 - 50),
        },
        3 => {
            let d = f64::from_bits(rng.u64(..));
            Value::Double(if d.is_nan() { 0.5 } else { d })
        }
        4 => Value::String(string(rng).into()),
        5 => Value::Bytes((0..rng.usize(..80)).map(|_| rng.u64(..) as u8).collect()),
        6 => {
            // Every year chrono holds (-262143..=262142), with and without a fraction.
            let (lo, hi) = (-8_334_601_228_800i64, 8_210_266_876_799i64);
            let secs = lo + (rng.u64(..) % (hi - lo + 1) as u64) as i64;
            let nanos = match rng.usize(..4) {
                0 => 0,
                1 => rng.u32(..1000) * 1_000_000,
                2 => rng.u32(..1_000_000) * 1000,
                _ => rng.u32(..1_000_000_000),
            };
            Value::DateTime(DateTime::from_unix(secs, nanos).unwrap())
        }
        7 => Value::Array((0..rng.usize(..5)).map(|_| value(rng, depth - 1)).collect()),
        _ => {
            let mut m = Map::default();
            for _ in 0..rng.usize(..5) {
                m.insert(string(rng), value(rng, depth - 1));
            }
            Value::Struct(Box::new(m))
        }
    }
}

#[test]
fn random_values_round_trip_through_call_and_response() {
    let mut rng = Rng::with_seed(0x2545_F491_4F6C_DD1D);
    let limits = Limits::default();
    let mut out = Vec::new();
    for i in 0..3000 {
        let params: Vec<Value> = (0..rng.usize(..4)).map(|_| value(&mut rng, 4)).collect();
        let method = format!("m.{i}");
        out.clear();
        write_call(&mut out, &method, &params);
        let call = parse_call(&out, &limits)
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&out)));
        assert_eq!(call.method, method);
        assert_eq!(call.params, params, "{}", String::from_utf8_lossy(&out));

        let result = value(&mut rng, 4);
        out.clear();
        write_response(&mut out, &result);
        assert_eq!(parse_response(&out, &limits).unwrap(), Ok(result));
    }
}

#[test]
fn doubles_keep_their_bits() {
    let mut rng = Rng::with_seed(7);
    let mut out = Vec::new();
    let specials = [
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::INFINITY,
        -f64::INFINITY,
    ];
    let randoms = (0..2000)
        .map(|_| f64::from_bits(rng.u64(..)))
        .filter(|d| !d.is_nan());
    for d in specials.into_iter().chain(randoms) {
        out.clear();
        write_response(&mut out, &Value::Double(d));
        match parse_response(&out, &Limits::default()).unwrap() {
            Ok(Value::Double(back)) => assert_eq!(back.to_bits(), d.to_bits(), "{d}"),
            other => panic!("{other:?}"),
        }
    }
    out.clear();
    write_response(&mut out, &Value::Double(f64::NAN));
    let back = parse_response(&out, &Limits::default()).unwrap();
    assert!(matches!(back, Ok(Value::Double(d)) if d.is_nan()));
}

/// The same document spelled so that no tag matches the parser's fast paths (a space
/// before every `>` or `/>`), or with a comment after every tag (so every text and every
/// expected tag is first met by the general path). Either must read exactly as the
/// plain spelling does.
fn respelled(doc: &[u8], comments: bool) -> Vec<u8> {
    let body_at = doc.windows(2).position(|w| w == b"?>").map_or(0, |i| i + 2);
    let mut out = doc[..body_at].to_vec();
    for (i, &b) in doc.iter().enumerate().skip(body_at) {
        if b == b'>' {
            if comments {
                out.push(b);
                out.extend_from_slice(b"<!---->");
                continue;
            }
            if doc[i - 1] == b'/' {
                out.pop();
                out.extend_from_slice(b" /");
            } else {
                out.push(b' ');
            }
        }
        out.push(b);
    }
    out
}

#[test]
fn fast_and_general_paths_read_the_same() {
    let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let limits = Limits::default();
    let mut out = Vec::new();
    for i in 0..1000 {
        let params: Vec<Value> = (0..rng.usize(..4)).map(|_| value(&mut rng, 4)).collect();
        out.clear();
        write_call(&mut out, &format!("m.{i}"), &params);
        for comments in [false, true] {
            let doc = respelled(&out, comments);
            let call = parse_call(&doc, &limits)
                .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&doc)));
            assert_eq!(call.params, params, "{}", String::from_utf8_lossy(&doc));
        }
    }
    // The respelling really changes the document (so the general path is what ran).
    out.clear();
    write_call(&mut out, "m", &[Value::Nil, Value::from("x")]);
    let spaced = String::from_utf8(respelled(&out, false)).unwrap();
    assert!(
        spaced.contains("<nil />") && spaced.contains("<string >x</string >"),
        "{spaced}"
    );
}

#[test]
fn forbidden_characters_never_round_trip_silently() {
    let mut rng = Rng::with_seed(11);
    let forbidden = [
        '\0', '\u{1}', '\u{8}', '\u{b}', '\u{c}', '\u{1b}', '\u{1f}', '\u{fffe}', '\u{ffff}',
    ];
    let limits = Limits::default();
    for _ in 0..500 {
        // A good value, with one forbidden character put into one of its strings.
        let mut v = Value::Array(vec![value(&mut rng, 3), Value::Nil]);
        let c = forbidden[rng.usize(..forbidden.len())];
        let s = format!("{}{c}{}", string(&mut rng), string(&mut rng));
        v = match rng.usize(..2) {
            0 => Value::Array(vec![v, Value::from(s)]),
            _ => {
                let mut m = Map::default();
                m.insert(s, v);
                Value::Struct(Box::new(m))
            }
        };
        let want = format!("(U+{:04X})", u32::from(c));
        let err = check_xml_chars(&v).unwrap_err();
        assert!(err.message.contains(&want), "{err}");
        let mut out = Vec::new();
        assert_eq!(try_write_response(&mut out, &v), Err(err.clone()));
        assert_eq!(
            try_write_call(&mut out, "m", &[v.clone()]),
            Err(err.clone())
        );
        assert!(out.is_empty());
        // The infallible writers: a fault instead, or a call every reader refuses.
        write_response(&mut out, &v);
        let fault = parse_response(&out, &limits).unwrap().unwrap_err();
        assert_eq!(
            (fault.code, &fault.message),
            (RpcError::INTERNAL_ERROR, &err.message)
        );
        out.clear();
        write_call(&mut out, "m", &[v]);
        let refused = parse_call(&out, &limits).unwrap_err();
        assert_eq!(refused.code, RpcError::PARSE_ERROR, "{refused}");
    }
}
