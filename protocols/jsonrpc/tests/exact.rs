//! Issue 11, "Bounded under attack": numbers and ids come back exactly as sent, and a
//! huge batch is refused without being built.

use fastrand::Rng;
use rpcmux_jsonrpc::{
    parse, parse_response, parse_with, write_error, write_result, write_result_in, Failed, Id,
    Incoming, ParseLimits, Request, Version,
};
use rpcmux_value::{Params, RpcError, Value};
use std::time::{Duration, Instant};

fn single(body: &[u8]) -> Result<Request, Failed> {
    match parse(body).unwrap() {
        Incoming::Single(r) => r,
        other => panic!("not single: {other:?}"),
    }
}

fn result_text(id: &Id, v: &Value) -> String {
    let mut out = Vec::new();
    write_result(&mut out, id, v);
    String::from_utf8(out).unwrap()
}

#[test]
fn random_doubles_keep_their_bits_through_parse_and_write_result() {
    let mut rng = Rng::with_seed(0x5EED_F10A7);
    let mut done = 0;
    while done < 100_000 {
        let doubles: Vec<f64> = std::iter::repeat_with(|| f64::from_bits(rng.u64(..)))
            .filter(|d| d.is_finite())
            .take(1000)
            .collect();
        let texts: Vec<String> = doubles
            .iter()
            .map(|d| serde_json::to_string(d).unwrap())
            .collect();
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"echo","params":[{}],"id":1}}"#,
            texts.join(",")
        );
        let req = single(body.as_bytes()).unwrap();
        let Params::Positional(got) = &req.params else {
            panic!()
        };
        for ((d, text), v) in doubles.iter().zip(&texts).zip(got) {
            match v {
                Value::Double(back) => assert_eq!(back.to_bits(), d.to_bits(), "{text}"),
                other => panic!("{text} read as {other:?}"),
            }
        }
        // Written back: the same shortest text, which reads back to the same bits.
        let echoed = Value::Array(got.clone());
        let out = result_text(&Id::from(1), &echoed);
        let want = format!(
            r#"{{"jsonrpc":"2.0","result":[{}],"id":1}}"#,
            texts.join(",")
        );
        assert_eq!(out, want);
        let back = parse_response(out.as_bytes()).unwrap().outcome.unwrap();
        let Value::Array(back) = back else { panic!() };
        for (d, v) in doubles.iter().zip(&back) {
            assert!(
                matches!(v, Value::Double(b) if b.to_bits() == d.to_bits()),
                "{d:e}"
            );
        }
        done += doubles.len();
    }
}

#[test]
fn integers_beyond_i64_are_exact_doubles_or_refused() {
    let req = |params: &str| {
        single(format!(r#"{{"jsonrpc":"2.0","method":"m","params":{params},"id":"k"}}"#).as_bytes())
    };
    let exact = [
        ("9223372036854775808", 9223372036854775808.0),
        ("18446744073709549568", 18446744073709549568.0),
        ("18446744073709551616", 18446744073709551616.0),
        ("-9223372036854775808", -9223372036854775808.0),
        ("1180591620717411303424", 1180591620717411303424.0),
        ("1e2", 100.0),
        ("1e19", 1e19),
        ("123456789012345678901234567890.0", 1.2345678901234568e29),
    ];
    for (text, d) in exact {
        let r = req(&format!("[{text}]")).unwrap();
        let want = if text == "-9223372036854775808" {
            Value::Int(i64::MIN)
        } else {
            Value::Double(d)
        };
        assert_eq!(r.params, Params::Positional(vec![want]), "{text}");
    }
    for text in [
        "18446744073709551615",
        "9223372036854775809",
        "-9223372036854775809",
        "123456789012345678901234567890",
    ] {
        for params in [
            format!("[1,[{text}]]"),
            format!(r#"{{"a":{{"b":{text}}}}}"#),
        ] {
            let f = req(&params).unwrap_err();
            assert_eq!(f.id, Id::from("k"));
            assert_eq!(
                f.error.code,
                RpcError::INVALID_PARAMS,
                "{params}: {}",
                f.error
            );
            assert!(f.error.message.contains(text), "{}", f.error);
        }
    }
    // The same digits in a string, or in the id, are no number to refuse.
    let ok = single(
        br#"{"jsonrpc":"2.0","method":"m","params":["18446744073709551615",1e300],"id":18446744073709551615}"#,
    )
    .unwrap();
    assert_eq!(ok.id.unwrap().to_string(), "18446744073709551615");
}

#[test]
fn ids_are_echoed_byte_exact() {
    for id in [
        "1e2",
        "-0",
        "1.50",
        "123456789012345678901234567890",
        "0.1",
        "7",
        "-12",
        "1E+2",
        "18446744073709551615",
        r#""s\u00e9\"q""#,
        "null",
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"m","params":[],"id": {id} }}"#);
        let r = single(body.as_bytes()).unwrap();
        let got = r.id.unwrap();
        let mut out = Vec::new();
        write_result(&mut out, &got, &Value::Nil);
        let text = String::from_utf8(out.clone()).unwrap();
        let want_id = if id.starts_with('"') {
            r#""sé\"q""#
        } else {
            id
        };
        assert_eq!(
            text,
            format!(r#"{{"jsonrpc":"2.0","result":null,"id":{want_id}}}"#)
        );
        assert_eq!(parse_response(&out).unwrap().id, got, "read back");
        out.clear();
        write_error(&mut out, &got, &RpcError::method_not_found("m"));
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with(&format!(r#""id":{want_id}}}"#)), "{text}");
        // An invalid request keeps the id's spelling too (fast and slow paths).
        for bad in [
            format!(r#"{{"jsonrpc":"3.0","method":"m","id":{id}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":5,"id":{id}}}"#),
            format!(r#"{{"method":5,"params":[],"id":{id}}}"#),
        ] {
            let f = single(bad.as_bytes()).unwrap_err();
            assert_eq!(f.id, got, "{bad}");
        }
        // A JSON-RPC 1.0 request's id comes back as exactly, in 1.0's reply (its null
        // id makes a notification).
        let v1 = format!(r#"{{"method":"m","params":[1e2],"id":{id}}}"#);
        let r = single(v1.as_bytes()).unwrap();
        assert_eq!(r.version, Version::V1);
        assert_eq!(r.params, Params::Positional(vec![Value::Double(100.0)]));
        if id == "null" {
            assert_eq!(r.id, None, "a 1.0 null id is a notification");
        } else {
            assert_eq!(r.id.as_ref(), Some(&got));
            let mut out = Vec::new();
            write_result_in(&mut out, Version::V1, &got, &Value::Int(1));
            let text = String::from_utf8(out.clone()).unwrap();
            assert_eq!(
                text,
                format!(r#"{{"result":1,"error":null,"id":{want_id}}}"#)
            );
            assert_eq!(parse_response(&out).unwrap().id, got, "read back");
        }
        // And inside a batch.
        let batch = format!(r#"[{{"jsonrpc":"2.0","method":"m","id":{id}}}]"#);
        let Incoming::Batch(items) = parse(batch.as_bytes()).unwrap() else {
            panic!()
        };
        assert_eq!(items[0].as_ref().unwrap().id.as_ref(), Some(&got));
    }
    // Ids the client code builds still compare, print and match.
    assert_eq!(Id::from(7).to_string(), "7");
    assert_eq!(Id::from("a").to_string(), "\"a\"");
    let Some(Id::Number(n)) = single(br#"{"jsonrpc":"2.0","method":"m","id":42}"#)
        .unwrap()
        .id
    else {
        panic!()
    };
    assert_eq!(n.as_u64(), Some(42));
}

fn batch_of(n: usize, member: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(n * (member.len() + 1) + 2);
    body.push(b'[');
    for i in 0..n {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(member.as_bytes());
    }
    body.push(b']');
    body
}

#[test]
fn huge_batches_are_refused_before_being_built() {
    let call = r#"{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}"#;
    for member in ["1", call] {
        let body = batch_of(2_000_000, member);
        let start = Instant::now();
        let err = parse(&body).unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.code, RpcError::INVALID_REQUEST);
        assert_eq!(
            err.message,
            "Invalid request: batch of more than 1000 calls"
        );
        // Reading stops at member 1001: a debug build on a busy machine still takes
        // milliseconds, where building 2M members took seconds and gigabytes.
        assert!(took < Duration::from_millis(500), "{took:?}");
    }
    // Exactly the cap is accepted, one more is not; the cap is the caller's to set.
    let limits = ParseLimits { max_batch: 3 };
    let Incoming::Batch(items) = parse_with(&batch_of(3, call), &limits).unwrap() else {
        panic!()
    };
    assert_eq!(items.len(), 3);
    let err = parse_with(&batch_of(4, "1"), &limits).unwrap_err();
    assert_eq!(err.message, "Invalid request: batch of more than 3 calls");
    let Incoming::Batch(items) = parse(&batch_of(1000, "1")).unwrap() else {
        panic!()
    };
    assert_eq!(items.len(), 1000);
    // A broken body under the cap is still a parse error; over it, the cap speaks first.
    assert_eq!(parse(b"[1,1,").unwrap_err().code, RpcError::PARSE_ERROR);
    assert_eq!(
        parse_with(b"[1,1,1,1,", &limits).unwrap_err().code,
        RpcError::INVALID_REQUEST
    );
    assert_eq!(parse(b"[]").unwrap_err().code, RpcError::INVALID_REQUEST);
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let r = single(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}").unwrap();
    assert_eq!(r.method, "m");
    let Incoming::Batch(items) =
        parse(b"\xEF\xBB\xBF [{\"jsonrpc\":\"2.0\",\"method\":\"m\"}]").unwrap()
    else {
        panic!()
    };
    assert_eq!(items.len(), 1);
    // Only one, only at the start.
    assert_eq!(
        parse(b"\xEF\xBB\xBF\xEF\xBB\xBF{}").unwrap_err().code,
        -32700
    );
    assert_eq!(parse(b" \xEF\xBB\xBF{}").unwrap_err().code, -32700);
}

#[test]
fn a_batch_member_must_be_an_object() {
    // serde reads a struct from an array too: ["2.0","m"] must not pass for a request.
    let Incoming::Batch(items) =
        parse(br#"[["2.0","m",[],1], {"jsonrpc":"2.0","method":"m"}]"#).unwrap()
    else {
        panic!()
    };
    let f = items[0].as_ref().unwrap_err();
    assert_eq!(f.error.code, RpcError::INVALID_REQUEST);
    assert!(items[1].is_ok());
}
