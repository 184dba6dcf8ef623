//! JSON-RPC decode -> encode -> decode gives the same values: a parsed request is written
//! back with `write_request`, its params (as a value) with `write_result` (and, for a
//! JSON-RPC 1.0 request, with 1.0's `write_result_in` too); a parsed response with
//! `write_result` / `write_error`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::{same_error, same_params, same_value};
use rpcmux_jsonrpc::{
    parse, parse_response, write_error, write_request, write_result, write_result_in, Id, Incoming,
    Request, Version,
};
use rpcmux_value::{Params, Value};

fn result_round_trip(id: &Id, v: &Value) {
    let mut out = Vec::new();
    write_result(&mut out, id, v);
    let back = parse_response(&out).unwrap_or_else(|e| {
        panic!(
            "{v:?} wrote {} which reads as {e:?}",
            String::from_utf8_lossy(&out)
        )
    });
    assert_eq!(&back.id, id);
    match &back.outcome {
        Ok(b) => assert!(
            same_value(v, b),
            "{v:?} came back as {b:?} from {}",
            String::from_utf8_lossy(&out)
        ),
        Err(e) => panic!("{v:?} came back as error {e:?}"),
    }
}

fn request_round_trip(req: &Request) {
    let mut out = Vec::new();
    write_request(&mut out, req.id.as_ref(), &req.method, &req.params);
    match parse(&out) {
        Ok(Incoming::Single(Ok(back))) => {
            assert_eq!(back.id, req.id);
            assert_eq!(back.method, req.method);
            assert!(
                same_params(&back.params, &req.params),
                "{req:?} came back as {back:?}"
            );
        }
        other => panic!(
            "{req:?} wrote {} which reads as {other:?}",
            String::from_utf8_lossy(&out)
        ),
    }
    let as_value = match &req.params {
        Params::Positional(v) => Value::Array(v.clone()),
        Params::Named(m) => Value::Struct(Box::new(m.clone())),
    };
    result_round_trip(req.id.as_ref().unwrap_or(&Id::Null), &as_value);
    if req.version == Version::V1 {
        let id = req.id.as_ref().unwrap_or(&Id::Null);
        let mut out = Vec::new();
        write_result_in(&mut out, Version::V1, id, &as_value);
        let back = parse_response(&out).expect("a 1.0 reply reads back");
        assert_eq!(&back.id, id);
        match &back.outcome {
            Ok(b) => assert!(same_value(&as_value, b), "{as_value:?} came back as {b:?}"),
            Err(e) => panic!("a 1.0 result came back as error {e:?}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match parse(data) {
        Ok(Incoming::Single(Ok(req))) => request_round_trip(&req),
        Ok(Incoming::Batch(items)) => items.iter().flatten().for_each(request_round_trip),
        _ => {}
    }
    if let Ok(resp) = parse_response(data) {
        match &resp.outcome {
            Ok(v) => result_round_trip(&resp.id, v),
            Err(e) => {
                let mut out = Vec::new();
                write_error(&mut out, &resp.id, e);
                let back = parse_response(&out).expect("a written error reads back");
                assert_eq!(back.id, resp.id);
                match &back.outcome {
                    Err(b) => assert!(same_error(e, b), "{e:?} came back as {b:?}"),
                    Ok(v) => panic!("{e:?} came back as result {v:?}"),
                }
            }
        }
    }
});
