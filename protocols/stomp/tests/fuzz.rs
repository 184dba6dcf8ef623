//! Never panic on any input, and give the same answer however the input is split.
//!
//! A deterministic, dependency-free fuzz: random bytes drawn from STOMP's alphabet,
//! and valid frame streams with random mutations (flips, insertions, deletions,
//! truncation), each decoded whole and in several splits (`decode_every_way` asserts
//! they agree), with small limits so every cap is exercised too.

mod common;

use common::decode_every_way;
use fastrand::Rng;
use rpcmux_stomp::Limits;

const SEEDS: &[&[u8]] = &[
    b"CONNECT\naccept-version:1.2\nhost:h\nheart-beat:1000,1000\n\n\0",
    b"STOMP\r\naccept-version:1.2\r\nlogin:u\r\npasscode:pa:ss\r\n\r\n\0\r\n",
    b"SEND\ndestination:a\\cb\ncontent-length:4\n\n\0\n\0\r\0\n",
    b"SUBSCRIBE\nid:sub-1\ndestination:/q\nack:auto\n\n\0",
    b"MESSAGE\nsubscription:0\nmessage-id:1\n\n{\"a\":1}\0\n\nACK\nid:1\n\n\0",
    b"\n\r\n\nDISCONNECT\nreceipt:bye\n\n\0",
];

const ALPHABET: &[u8] = b"\n\r\0:\\cnrSENDCOTMPx-0123456789 \xff\xc3";

fn limits(rng: &mut Rng) -> Limits {
    if rng.usize(..2) == 0 {
        Limits::default()
    } else {
        Limits {
            max_frame: 8 + rng.usize(..80),
            max_headers: rng.usize(..5),
            max_header_line: rng.usize(..24),
        }
    }
}

#[test]
fn random_bytes() {
    let mut rng = Rng::with_seed(1);
    for _ in 0..3000 {
        let len = rng.usize(..64);
        let input: Vec<u8> = (0..len).map(|_| *rng.choice(ALPHABET).unwrap()).collect();
        let l = limits(&mut rng);
        decode_every_way(&input, l);
    }
}

#[test]
fn mutated_valid_streams() {
    let mut rng = Rng::with_seed(2);
    for _ in 0..4000 {
        let mut input: Vec<u8> = Vec::new();
        for _ in 0..1 + rng.usize(..3) {
            input.extend_from_slice(rng.choice(SEEDS).unwrap());
        }
        for _ in 0..rng.usize(..4) {
            if input.is_empty() {
                break;
            }
            let at = rng.usize(..input.len());
            match rng.usize(..4) {
                0 => input[at] = *rng.choice(ALPHABET).unwrap(),
                1 => input.insert(at, *rng.choice(ALPHABET).unwrap()),
                2 => {
                    input.remove(at);
                }
                _ => input.truncate(at),
            }
        }
        let l = limits(&mut rng);
        decode_every_way(&input, l);
    }
}
