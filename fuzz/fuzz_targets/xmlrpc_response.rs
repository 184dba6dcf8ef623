//! `rpcmux_xmlrpc::parse_response` on any bytes: never panics, and limits only ever
//! refuse (what parses under small limits parses the same under the defaults).
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::{same_error, same_value};
use rpcmux_xmlrpc::{parse_response, Limits};

const SMALL: Limits = Limits {
    max_depth: 3,
    max_elements: 40,
    max_string: 32,
};

fuzz_target!(|data: &[u8]| {
    let full = parse_response(data, &Limits::DEFAULT);
    if let Ok(small) = parse_response(data, &SMALL) {
        let full = full.expect("accepted under small limits but refused under the defaults");
        match (&small, &full) {
            (Ok(a), Ok(b)) => assert!(same_value(a, b)),
            (Err(a), Err(b)) => assert!(same_error(a, b)),
            _ => panic!("small {small:?} vs full {full:?}"),
        }
    }
});
