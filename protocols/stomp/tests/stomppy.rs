//! Frames exactly as stomp.py 9.0.0's `Connection12` writes them (captured bytes, see
//! tests/fixtures/README.md).

mod common;

use bytes::BytesMut;
use common::decode_every_way;
use rpcmux_stomp::{
    encode_frame, heartbeat_negotiate, parse_heartbeat, probe_client_frame, Command, Limits, Probe,
};

const SESSION: &[u8] = include_bytes!("fixtures/stomppy_session.bin");
const SESSION_HB: &[u8] = include_bytes!("fixtures/stomppy_session_heartbeat.bin");
const SEND_ECHO: &[u8] = include_bytes!("fixtures/stomppy_send_echo.bin");

#[test]
fn session_without_heartbeats() {
    assert_eq!(probe_client_frame(SESSION), Probe::Match);
    let out = decode_every_way(SESSION, Limits::default());
    assert_eq!(out.error, None);
    assert_eq!(out.heartbeats(), 0);
    let f = out.frames();
    let commands: Vec<_> = f.iter().map(|f| f.command).collect();
    use Command::*;
    assert_eq!(commands, [Stomp, Subscribe, Send, Send, Disconnect]);

    assert_eq!(f[0].get("accept-version"), Some("1.2"));
    assert_eq!(f[0].get("host"), Some("localhost"));
    assert_eq!(f[0].get("heart-beat"), None);

    assert_eq!(f[1].get("id"), Some("sub-1"));
    assert_eq!(f[1].get("destination"), Some("jms.topic.vdsm_responses"));
    assert_eq!(f[1].get("ack"), Some("auto"));

    let send = f[2];
    assert_eq!(send.get("destination"), Some("jms.topic.vdsm_requests"));
    assert_eq!(send.get("reply-to"), Some("jms.topic.vdsm_responses"));
    assert_eq!(send.get("content-length"), Some("703"));
    assert_eq!(send.body.len(), 703);
    assert!(send
        .body
        .starts_with(br#"{"jsonrpc": "2.0", "method": "echo""#));
    assert!(send.body.ends_with(br#""id": 1}"#));

    // stomp.py escaped this value; we get the original back.
    assert_eq!(f[3].get("x-escaped"), Some("a:b\\c\r\nd"));
    assert_eq!(&f[3].body[..], b"x");

    assert_eq!(f[4].get("receipt"), Some("bye"));
}

#[test]
fn session_with_heartbeats_and_login() {
    let out = decode_every_way(SESSION_HB, Limits::default());
    assert_eq!(out.error, None);
    // Two heart-beat LFs between SUBSCRIBE and SEND.
    assert_eq!(out.heartbeats(), 2);
    let f = out.frames();
    assert_eq!(f.len(), 5);
    let connect = f[0];
    assert_eq!(connect.command, Command::Stomp);
    assert_eq!(connect.get("login"), Some("user"));
    // STOMP frames are not escaped: the raw colon stays in the value.
    assert_eq!(connect.get("passcode"), Some("pa:ss"));
    let hb = parse_heartbeat(connect.get("heart-beat").unwrap()).unwrap();
    assert_eq!(hb, (1000, 1000));
    // With a 1000 ms server floor: both directions every second.
    assert_eq!(heartbeat_negotiate(hb, (1000, 1000)), (1000, 1000));
}

#[test]
fn send_fixture_is_the_session_send() {
    let alone = decode_every_way(SEND_ECHO, Limits::default());
    let session = decode_every_way(SESSION, Limits::default());
    assert_eq!(alone.frames()[0], session.frames()[2]);
}

#[test]
fn our_encoding_of_stomppy_frames_decodes_the_same() {
    for fixture in [SESSION, SESSION_HB] {
        let out = decode_every_way(fixture, Limits::default());
        for frame in out.frames() {
            let mut wire = BytesMut::new();
            encode_frame(frame, &mut wire).unwrap();
            let again = decode_every_way(&wire, Limits::default());
            assert_eq!(again.frames()[0], frame);
        }
    }
}
