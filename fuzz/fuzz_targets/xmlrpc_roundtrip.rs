//! XML-RPC decode -> encode -> decode gives the same values: a parsed call is written
//! back with `write_call`, each of its params and any parsed response result with
//! `write_response`, a parsed fault with `write_fault`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::same_values;
use rpcmux_value::Value;
use rpcmux_xmlrpc::{parse_call, parse_response, write_call, write_fault, write_response, Limits};

fn value_round_trip(v: &Value) {
    let mut out = Vec::new();
    write_response(&mut out, v);
    match parse_response(&out, &Limits::DEFAULT) {
        Ok(Ok(back)) => assert!(
            rpcmux_fuzz::same_value(v, &back),
            "{v:?} came back as {back:?} from {}",
            String::from_utf8_lossy(&out)
        ),
        other => panic!(
            "{v:?} wrote {} which reads as {other:?}",
            String::from_utf8_lossy(&out)
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(call) = parse_call(data, &Limits::DEFAULT) {
        let mut out = Vec::new();
        write_call(&mut out, &call.method, &call.params);
        let back = parse_call(&out, &Limits::DEFAULT).unwrap_or_else(|e| {
            panic!(
                "{call:?} wrote {} which reads as {e:?}",
                String::from_utf8_lossy(&out)
            )
        });
        assert_eq!(back.method, call.method);
        assert!(
            same_values(&back.params, &call.params),
            "{call:?} came back as {back:?}"
        );
        for p in &call.params {
            value_round_trip(p);
        }
    }
    match parse_response(data, &Limits::DEFAULT) {
        Ok(Ok(v)) => value_round_trip(&v),
        Ok(Err(fault)) => {
            let mut out = Vec::new();
            write_fault(&mut out, &fault);
            match parse_response(&out, &Limits::DEFAULT) {
                Ok(Err(back)) => {
                    assert_eq!(
                        back.code,
                        fault.code.clamp(i32::MIN.into(), i32::MAX.into())
                    );
                    assert_eq!(back.message, fault.message);
                }
                other => panic!(
                    "{fault:?} wrote {} which reads as {other:?}",
                    String::from_utf8_lossy(&out)
                ),
            }
        }
        Err(_) => {}
    }
});
