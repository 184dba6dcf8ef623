//! Encode then decode gives the frame back, for random frames of every command.

mod common;

use bytes::{Bytes, BytesMut};
use common::decode_every_way;
use fastrand::Rng;
use rpcmux_stomp::{encode_frame, Command, Frame, Item, Limits, StompCodec};
use tokio_util::codec::Encoder;

/// Characters that stress escaping and UTF-8.
const CHARS: &[&str] = &[
    "a", "Z", "0", "-", ":", "\\", "\n", "\r", "c", "n", " ", "é", "✓",
];
/// What an unescaped (CONNECT-family) header may carry.
const RAW_CHARS: &[&str] = &["a", "Z", "0", "-", "\\", "c", " ", "é", "✓"];

fn text(rng: &mut Rng, pool: &[&str], max: usize) -> String {
    (0..rng.usize(..max + 1))
        .map(|_| *rng.choice(pool).unwrap())
        .collect()
}

fn random_frame(rng: &mut Rng) -> Frame {
    let command = *rng.choice(&Command::ALL).unwrap();
    let mut frame = Frame::new(command);
    for _ in 0..rng.usize(..6) {
        let (name, value) = if command.escapes_headers() {
            (text(rng, CHARS, 8), text(rng, CHARS, 12))
        } else {
            (
                text(rng, RAW_CHARS, 8),
                format!("{}:{}", text(rng, RAW_CHARS, 4), text(rng, RAW_CHARS, 4)),
            )
        };
        let name = if name.is_empty() {
            "x".to_string()
        } else {
            name
        };
        frame.push_header(name, value);
    }
    let body: Vec<u8> = (0..rng.usize(..40)).map(|_| rng.u64(..) as u8).collect();
    frame.with_body(body)
}

#[test]
fn random_frames_round_trip() {
    let mut rng = Rng::with_seed(0x5707);
    for _ in 0..2000 {
        let frame = random_frame(&mut rng);
        let mut wire = BytesMut::new();
        encode_frame(&frame, &mut wire).unwrap();
        let out = decode_every_way(&wire, Limits::default());
        assert_eq!(out.error, None, "{frame:?} as {wire:?}");
        let got = out.frames()[0].clone();
        // The decoder also reports the content-length the encoder added.
        let mut want = frame.clone();
        if !frame.body.is_empty() {
            want.push_header("content-length", frame.body.len().to_string());
        }
        assert_eq!(got, want);
    }
}

#[test]
fn reencoding_a_decoded_frame_replaces_its_content_length() {
    let f = Frame::new(Command::Send)
        .header("content-length", "3")
        .header("destination", "q")
        .with_body(Bytes::from_static(b"longer body"));
    let mut wire = BytesMut::new();
    encode_frame(&f, &mut wire).unwrap();
    assert_eq!(
        &wire[..],
        b"SEND\ncontent-length:11\ndestination:q\n\nlonger body\0"
    );
}

#[test]
fn codec_encodes_frames_items_and_heartbeats() {
    let mut codec = StompCodec::default();
    let mut wire = BytesMut::new();
    let f = Frame::new(Command::Receipt).header("receipt-id", "77");
    codec.encode(&f, &mut wire).unwrap();
    codec.encode(Item::Heartbeat, &mut wire).unwrap();
    codec.encode(Item::Frame(f.clone()), &mut wire).unwrap();
    codec.encode(f, &mut wire).unwrap();
    assert_eq!(
        &wire[..],
        &b"RECEIPT\nreceipt-id:77\n\n\0\nRECEIPT\nreceipt-id:77\n\n\0RECEIPT\nreceipt-id:77\n\n\0"
            [..]
    );
}

#[test]
fn error_frames_from_errors_encode() {
    let e = rpcmux_stomp::StompError::BadCommand("\"x:\\ny\"".into());
    let mut wire = BytesMut::new();
    encode_frame(&e.error_frame(), &mut wire).unwrap();
    let out = decode_every_way(&wire, Limits::default());
    assert_eq!(
        out.frames()[0].get("message"),
        Some(r#"unknown command "x:\ny""#)
    );
}
