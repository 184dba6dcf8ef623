//! `rpcmux_jsonrpc::parse` (requests and batches) on any bytes: never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_jsonrpc::{parse, Incoming};

fuzz_target!(|data: &[u8]| {
    if let Ok(Incoming::Batch(items)) = parse(data) {
        assert!(!items.is_empty(), "an empty batch must be refused");
    }
});
