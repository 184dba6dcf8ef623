//! `rpcmux_xmlrpc::parse_call` on any bytes: never panics, and limits only ever refuse
//! (what parses under small limits parses the same under the defaults).
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::same_values;
use rpcmux_xmlrpc::{parse_call, Limits};

const SMALL: Limits = Limits {
    max_depth: 3,
    max_elements: 40,
    max_string: 32,
};

fuzz_target!(|data: &[u8]| {
    let full = parse_call(data, &Limits::DEFAULT);
    if let Ok(small) = parse_call(data, &SMALL) {
        let full = full.expect("accepted under small limits but refused under the defaults");
        assert_eq!(small.method, full.method);
        assert!(same_values(&small.params, &full.params));
    }
});
