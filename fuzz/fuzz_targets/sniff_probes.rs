//! The sniffer's probes (HTTP, JSON, msgpack-rpc, STOMP, TLS, PROXY) are monotone: once
//! a prefix answers Match (or NoMatch), every longer prefix answers the same. Each probe
//! is asked about every prefix of the input, as the sniffer does after each read.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_sniff::{self as sniff, Probe, ProbeFn};

const PROBES: &[(&str, ProbeFn)] = &[
    ("http", sniff::http),
    ("json", sniff::json),
    ("msgpack_rpc", sniff::msgpack_rpc),
    ("stomp", sniff::stomp),
    ("tls", sniff::tls),
    ("proxy", sniff::proxy),
];

/// The sniff buffer's cap: no probe is ever asked about more.
const SNIFF_MAX: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let data = &data[..data.len().min(SNIFF_MAX)];
    for (name, probe) in PROBES {
        let mut decided: Option<(usize, Probe)> = None;
        for i in 0..=data.len() {
            let v = probe(&data[..i]);
            match decided {
                Some((at, d)) => assert_eq!(
                    v,
                    d,
                    "{name}: {:?} answered {d:?} but its extension {:?} answers {v:?}",
                    &data[..at],
                    &data[..i]
                ),
                None if v != Probe::NeedMore => decided = Some((i, v)),
                None => {}
            }
        }
    }
});
