//! `parse_response` / `parse_response_or_notification` on any bytes: never panic, and
//! agree with each other on everything that is not a notification.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::{same_error, same_value};
use rpcmux_jsonrpc::{parse_response, parse_response_or_notification};

fuzz_target!(|data: &[u8]| {
    let plain = parse_response(data);
    if let Ok(Some(r)) = parse_response_or_notification(data) {
        let p = plain.expect("a response read by one parser but not the other");
        assert_eq!(p.id, r.id);
        match (&p.outcome, &r.outcome) {
            (Ok(a), Ok(b)) => assert!(same_value(a, b)),
            (Err(a), Err(b)) => assert!(same_error(a, b)),
            _ => panic!("{p:?} vs {r:?}"),
        }
    }
});
