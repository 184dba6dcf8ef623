//! The incremental decoder against hostile and fragmented input: any split of a stream
//! gives the same messages as one read, every prefix and random mutation is handled without
//! a panic, and caps trigger before a message is complete.

mod common;

use bytes::BytesMut;
use common::{music_entry, run_chunks, run_whole, Outcome};
use fastrand::Rng;
use rpcmux_msgpack_rpc::{
    encode_notification, encode_request, encode_response, CodecError, Limits, MsgpackRpcCodec,
};
use rpcmux_value::{DateTime, RpcError, Value};
use std::time::{Duration, Instant};
use tokio_util::codec::Decoder;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A stream of varied messages and where each one ends.
fn stream() -> (Vec<u8>, Vec<usize>) {
    let mut parts: Vec<Vec<u8>> = vec![
        fixture("pynvim_set_client_info.msgpack"),
        fixture("echo_music_request.msgpack"),
        fixture("timestamps_request.msgpack"),
        fixture("raw_bytes_request.msgpack"),
        fixture("int_keys_request.msgpack"),
        // an answerable bad request: params not an array
        vec![0x94, 0x00, 0x09, 0xa1, b'm', 0xc0],
    ];
    let mut b = BytesMut::new();
    encode_response(&mut b, 3, Ok(&music_entry()));
    encode_response(&mut b, 4, Err(&RpcError::method_not_found("x")));
    encode_notification(
        &mut b,
        "event",
        &[
            Value::DateTime(DateTime::from_unix(5, 6).unwrap()),
            Value::Bytes(vec![0; 300]),
            Value::from("s".repeat(70_000)),
        ],
    )
    .unwrap();
    encode_request(
        &mut b,
        u32::MAX,
        "big",
        &[Value::Array(vec![Value::Int(-70000); 20_000])],
    )
    .unwrap();
    parts.push(b.to_vec());
    let mut all = Vec::new();
    let mut ends = Vec::new();
    for p in parts {
        // the encoded block above holds several messages: find their ends by decoding
        let mut codec = MsgpackRpcCodec::default();
        let mut buf = BytesMut::from(&p[..]);
        let mut used = 0;
        while let Some(_m) = codec.decode(&mut buf).unwrap() {
            used = p.len() - buf.len();
            ends.push(all.len() + used);
        }
        assert_eq!(used, p.len());
        all.extend_from_slice(&p);
    }
    (all, ends)
}

#[test]
fn one_read_byte_by_byte_and_random_splits_agree() {
    let (bytes, ends) = stream();
    let whole = run_whole(Limits::default(), &bytes);
    assert_eq!(whole.error, None);
    assert_eq!(whole.messages.len(), ends.len());
    assert!(
        whole.messages[5].contains("Invalid"),
        "{}",
        whole.messages[5]
    );

    let by_byte = run_chunks(Limits::default(), bytes.chunks(1));
    assert_eq!(by_byte, whole);

    let mut rng = Rng::with_seed(7);
    for _ in 0..20 {
        let mut chunks = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let n = (1 + rng.usize(..700)).min(rest.len());
            chunks.push(&rest[..n]);
            rest = &rest[n..];
        }
        assert_eq!(run_chunks(Limits::default(), chunks), whole);
    }
}

#[test]
fn every_prefix_gives_the_messages_it_holds() {
    let (bytes, ends) = stream();
    let whole = run_whole(Limits::default(), &bytes);
    // Every prefix up to the end of the fifth message, then a sample of longer ones.
    let cuts = (0..=ends[4]).chain((ends[4]..bytes.len()).step_by(97));
    for cut in cuts {
        let got = run_whole(Limits::default(), &bytes[..cut]);
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(got.messages, whole.messages[..complete], "cut {cut}");
        let at_boundary = cut == 0 || ends.contains(&cut);
        assert_eq!(
            got.error.is_none(),
            at_boundary,
            "cut {cut}: {:?}",
            got.error
        );
        if let Some(e) = got.error {
            assert!(e.contains("ended inside a message"), "{e}");
        }
    }
}

/// Mutate `base` a few times: flip bits, set bytes to markers, insert, delete, truncate.
fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    const INTERESTING: [u8; 16] = [
        0x00, 0x7f, 0x80, 0x90, 0x94, 0x93, 0xc1, 0xc4, 0xc7, 0xd4, 0xd9, 0xdb, 0xdc, 0xdd, 0xdf,
        0xff,
    ];
    let mut b = base.to_vec();
    for _ in 0..1 + rng.usize(..4) {
        if b.is_empty() {
            b.push(rng.u64(..) as u8);
        }
        let i = rng.usize(..b.len());
        match rng.usize(..6) {
            0 => b[i] ^= 1 << rng.usize(..8),
            1 => b[i] = INTERESTING[rng.usize(..INTERESTING.len())],
            2 => b[i] = rng.u64(..) as u8,
            3 => b.insert(i, INTERESTING[rng.usize(..INTERESTING.len())]),
            4 => {
                b.remove(i);
            }
            _ => b.truncate(i),
        }
    }
    b
}

fn random_chunks<'a>(rng: &mut Rng, mut rest: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        let n = (1 + rng.usize(..40)).min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

#[test]
fn random_mutations_never_panic_and_splits_agree() {
    let bases: Vec<Vec<u8>> = [
        "echo_music_request.msgpack",
        "pynvim_set_client_info.msgpack",
        "timestamps_request.msgpack",
        "bin_request.msgpack",
        "int_keys_request.msgpack",
        "ints_request.msgpack",
        "error_response.msgpack",
        "notify_request.msgpack",
    ]
    .iter()
    .map(|n| fixture(n))
    .collect();
    // Small caps so mutations also run into them.
    let limits = Limits {
        max_message: 400,
        max_depth: 6,
    };
    let mut rng = Rng::with_seed(0x5eed);
    let mut outcomes = [0usize; 3]; // clean, invalid message, fatal error
    for case in 0..6000 {
        let base = &bases[case % bases.len()];
        // Two messages back to back, so a mutation can also break the boundary.
        let mut input = mutate(&mut rng, base);
        let second = &bases[rng.usize(..bases.len())];
        input.extend_from_slice(&mutate(&mut rng, second));
        let whole = run_whole(limits, &input);
        let split = run_chunks(limits, random_chunks(&mut rng, &input));
        assert_eq!(split, whole, "case {case}: {input:02x?}");
        if case % 10 == 0 {
            assert_eq!(run_chunks(limits, input.chunks(1)), whole, "case {case}");
        }
        outcomes[match &whole {
            Outcome { error: Some(_), .. } => 2,
            o if o.messages.iter().any(|m| m.starts_with("Invalid")) => 1,
            _ => 0,
        }] += 1;
    }
    // The mutations reach every kind of outcome.
    assert!(outcomes.iter().all(|&n| n > 50), "{outcomes:?}");
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::with_seed(42);
    for _ in 0..3000 {
        let len = rng.usize(..64);
        let mut input: Vec<u8> = (0..len).map(|_| rng.u64(..) as u8).collect();
        // Start most inputs like a message so the scanner gets past the first byte.
        if rng.usize(..4) != 0 && !input.is_empty() {
            input[0] = [0x93, 0x94, 0xdc][rng.usize(..3)];
        }
        let whole = run_whole(Limits::default(), &input);
        assert_eq!(run_chunks(Limits::default(), input.chunks(1)), whole);
    }
}

fn first_error(limits: Limits, bytes: &[u8]) -> (CodecError, usize) {
    let mut codec = MsgpackRpcCodec::new(limits);
    let mut buf = BytesMut::new();
    for (i, b) in bytes.iter().enumerate() {
        buf.extend_from_slice(&[*b]);
        match codec.decode(&mut buf) {
            Ok(None) => {}
            Ok(Some(m)) => panic!("unexpected {m:?}"),
            Err(e) => return (e, i + 1),
        }
    }
    panic!("no error")
}

#[test]
fn size_cap_triggers_before_the_message_is_complete() {
    let limits = Limits {
        max_message: 1000,
        max_depth: 64,
    };
    // A 100 MB string announced in a header: refused after 10 bytes.
    let mut b = vec![0x94, 0x00, 0x01, 0xa1, b'm', 0x91, 0xdb];
    b.extend_from_slice(&100_000_000u32.to_be_bytes());
    b.extend_from_slice(&[b'x'; 100]);
    let (e, read) = first_error(limits, &b);
    assert!(matches!(e, CodecError::TooLarge { limit: 1000, .. }), "{e}");
    assert_eq!(read, 11);

    // Many small items with no big length anywhere: refused when the declared count passes
    // the cap, not after buffering them all.
    let mut b = vec![0x94, 0x00, 0x01, 0xa1, b'm', 0xdc];
    b.extend_from_slice(&2000u16.to_be_bytes());
    b.extend(std::iter::repeat_n(0xc0, 2000));
    let (e, read) = first_error(limits, &b);
    assert!(matches!(e, CodecError::TooLarge { .. }), "{e}");
    assert_eq!(read, 8);

    // Nested arrays of one item each: no count is large, yet the sum of pending items
    // passes the cap only as bytes really arrive.
    let deep_ok = Limits {
        max_message: 100,
        max_depth: 1000,
    };
    let mut b = vec![0x94, 0x00, 0x01, 0xa1, b'm'];
    b.extend(std::iter::repeat_n(0x91, 200));
    let (e, read) = first_error(deep_ok, &b);
    assert!(matches!(e, CodecError::TooLarge { .. }), "{e}");
    assert!(read <= 101, "{read}");
}

#[test]
fn a_message_of_exactly_the_cap_passes() {
    let mut b = BytesMut::new();
    encode_request(&mut b, 1, "echo", &[Value::from("x".repeat(100))]).unwrap();
    let exact = Limits {
        max_message: b.len(),
        max_depth: 64,
    };
    assert_eq!(run_whole(exact, &b).error, None);
    let under = Limits {
        max_message: b.len() - 1,
        max_depth: 64,
    };
    assert!(run_whole(under, &b).error.unwrap().contains("too large"));
}

#[test]
fn deep_nesting_is_refused_without_recursion() {
    let mut b = vec![0x94, 0x00, 0x01, 0xa1, b'm'];
    b.extend(std::iter::repeat_n(0x91, 100_000));
    b.push(0xc0);
    let got = run_whole(Limits::default(), &b);
    assert!(got.error.unwrap().contains("nested too deep: more than 64"));
    let err = rpcmux_msgpack_rpc::decode_message(&b, &Limits::default()).unwrap_err();
    assert!(matches!(err, CodecError::TooDeep { limit: 64 }));
    let err = rpcmux_msgpack_rpc::read_value(&b[5..], 64).unwrap_err();
    assert!(matches!(err, CodecError::TooDeep { limit: 64 }));
}

#[test]
fn byte_by_byte_delivery_is_linear() {
    // 200 000 items: a decoder that re-parsed from the start on every byte would visit
    // ~10^11 items here and never finish; one that resumes visits each once.
    let mut b = BytesMut::new();
    encode_request(
        &mut b,
        1,
        "sum",
        &[Value::Array(vec![Value::Int(1000); 200_000])],
    )
    .unwrap();
    let start = Instant::now();
    let got = run_chunks(Limits::default(), b.chunks(1));
    assert_eq!((got.messages.len(), got.error), (1, None));
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn garbage_after_good_messages_is_fatal_but_they_are_delivered() {
    let mut b = BytesMut::new();
    encode_request(&mut b, 1, "ping", &[]).unwrap();
    b.extend_from_slice(b"GET / HTTP/1.1\r\n");
    let got = run_whole(Limits::default(), &b);
    assert_eq!(got.messages.len(), 1);
    assert!(got.error.unwrap().contains("first byte 0x47"));
    let m = &got.messages[0];
    assert!(m.starts_with("Request") && m.contains("ping"), "{m}");
}
