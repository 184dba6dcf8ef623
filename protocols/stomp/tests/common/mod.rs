//! Helpers shared by the integration tests.
#![allow(dead_code)]

use bytes::BytesMut;
use rpcmux_stomp::{Frame, Item, Limits, StompCodec};
use tokio_util::codec::Decoder;

/// Everything a decoder made of one input: the items in order, then the first error
/// (as its message) if any, and how many input bytes it had been given by then.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    pub items: Vec<Item>,
    pub error: Option<String>,
}

impl Outcome {
    pub fn frames(&self) -> Vec<&Frame> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Frame(f) => Some(f),
                Item::Heartbeat => None,
            })
            .collect()
    }
    pub fn heartbeats(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, Item::Heartbeat))
            .count()
    }
}

/// Feed `input` to a fresh codec in pieces whose sizes come from `sizes` (cycled),
/// draining `decode` after each piece, then signal end of stream (`decode_eof`).
pub fn decode_in_pieces(input: &[u8], limits: Limits, sizes: &[usize]) -> Outcome {
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    let mut rest = input;
    let mut sizes = sizes.iter().copied().filter(|&n| n > 0).cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => break,
                Err(e) => {
                    // Once failed, always failed.
                    assert!(codec.decode(&mut buf).is_err());
                    return Outcome {
                        items,
                        error: Some(e.to_string()),
                    };
                }
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return Outcome { items, error: None },
            Err(e) => {
                return Outcome {
                    items,
                    error: Some(e.to_string()),
                }
            }
        }
    }
}

pub fn decode_all(input: &[u8]) -> Outcome {
    decode_in_pieces(input, Limits::default(), &[usize::MAX])
}

/// Decode `input` whole, one byte at a time, and in a few other splits; assert all
/// agree, and return the outcome.
pub fn decode_every_way(input: &[u8], limits: Limits) -> Outcome {
    let whole = decode_in_pieces(input, limits, &[usize::MAX]);
    for sizes in [&[1][..], &[2], &[3], &[7], &[1, 5, 2, 64], &[4096]] {
        let split = decode_in_pieces(input, limits, sizes);
        assert_eq!(
            split,
            whole,
            "pieces {sizes:?} differ from one-shot for {:?}",
            String::from_utf8_lossy(input)
        );
    }
    whole
}
