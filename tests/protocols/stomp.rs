//! JSON-RPC over STOMP 1.2: the real stomp.py client, and raw frames over a socket.

use crate::common::*;
use bytes::BytesMut;
use rpcmux_stomp::{Command, Frame, Item, StompCodec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tokio_util::codec::{Decoder, Encoder};

const REQUESTS: &str = "jms.topic.vdsm_requests";
const RESPONSES: &str = "jms.topic.vdsm_responses";

/// A raw STOMP client: frames are encoded and decoded by the `rpcmux_stomp` codec, bytes
/// go over a plain blocking socket.
struct Client {
    s: TcpStream,
    codec: StompCodec,
    buf: BytesMut,
}

impl Client {
    fn raw(addr: SocketAddr) -> Client {
        Client {
            s: connect(addr),
            codec: StompCodec::default(),
            buf: BytesMut::new(),
        }
    }

    /// Connected with `accept-version:1.2` and `extra` headers; returns the CONNECTED frame.
    fn open(addr: SocketAddr, extra: &[(&str, &str)]) -> (Client, Frame) {
        let mut c = Client::raw(addr);
        let mut f = Frame::new(Command::Stomp)
            .header("accept-version", "1.2")
            .header("host", "localhost");
        for (n, v) in extra {
            f.push_header(*n, *v);
        }
        c.send(&f);
        let connected = c.frame().expect("CONNECTED");
        assert_eq!(connected.command, Command::Connected, "{connected:?}");
        (c, connected)
    }

    fn write(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    fn send(&mut self, f: &Frame) {
        let mut out = BytesMut::new();
        self.codec.encode(f, &mut out).unwrap();
        self.write(&out);
    }

    /// The next frame or heart-beat; `None` once the server has closed.
    fn item(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.codec.decode(&mut self.buf).expect("valid STOMP") {
                return Some(item);
            }
            let mut chunk = [0u8; 8192];
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next frame, skipping heart-beats.
    fn frame(&mut self) -> Option<Frame> {
        loop {
            match self.item()? {
                Item::Heartbeat => continue,
                Item::Frame(f) => return Some(f),
            }
        }
    }

    fn expect(&mut self, command: Command) -> Frame {
        let f = self
            .frame()
            .unwrap_or_else(|| panic!("closed while waiting for {command}"));
        assert_eq!(f.command, command, "{f:?}");
        f
    }

    /// After an ERROR the server closes: nothing more arrives.
    fn expect_closed(&mut self) {
        assert_eq!(self.frame(), None, "connection should be closed");
    }

    fn subscribe(&mut self, id: &str, dest: &str) {
        self.send(
            &Frame::new(Command::Subscribe)
                .header("id", id)
                .header("destination", dest)
                .header("receipt", format!("sub-{id}")),
        );
        let r = self.expect(Command::Receipt);
        assert_eq!(r.get("receipt-id"), Some(format!("sub-{id}").as_str()));
    }

    fn request(&mut self, body: &str) {
        self.send(&request(body));
    }
}

fn request(body: &str) -> Frame {
    Frame::new(Command::Send)
        .header("destination", REQUESTS)
        .header("reply-to", RESPONSES)
        .with_body(body.to_owned())
}

fn body(f: &Frame) -> serde_json::Value {
    json(&f.body)
}

fn error_message(f: &Frame) -> &str {
    assert_eq!(f.command, Command::Error, "{f:?}");
    f.get("message").expect("ERROR has a message header")
}

#[test]
fn stomppy_request_reply_with_reply_to() {
    let srv = Server::start(&[]);
    let out = run_py("stomp_client.py", &["127.0.0.1", &srv.port(), "rpc"]);
    assert!(out.contains("ok rpc"), "{out}");
    // The ovirtCorrelationId header is the call's flow id, in the log.
    assert!(
        srv.wait_log("flow-stomp-py", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
}

#[test]
fn stomppy_receives_vm_status_event_after_vm_create() {
    let srv = Server::start(&[]);
    let out = run_py("stomp_client.py", &["127.0.0.1", &srv.port(), "events"]);
    assert!(out.contains("ok events"), "{out}");
}

#[test]
fn stomppy_events_reach_every_covering_subscription_a_reply_the_first() {
    let srv = Server::start(&[]);
    let out = run_py("stomp_client.py", &["127.0.0.1", &srv.port(), "delivery"]);
    assert!(out.contains("ok delivery"), "{out}");
}

/// VDSM's `stomp_test.test_event` layout (its response queue and an event subscription
/// on `jms.queue.events`, one connection), with stomp.py and yajsonrpc's rule that a
/// reply must not come twice: the event arrives, and so does every later call's reply.
#[test]
fn vdsm_event_layout_gets_every_reply_once_and_its_events() {
    let srv = Server::start(&[]);
    let out = run_py("stomp_vdsm_layout.py", &[&srv.port()]);
    let v = json(out.trim().as_bytes());
    assert_eq!(
        v["replies_on"],
        serde_json::json!(["response-queue"]),
        "{v}"
    );
    let events = v["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e[0] == "events" && e[1] == "|virt|VM_status|layout"),
        "the event reached the event subscription: {v}"
    );
}

#[test]
fn frames_sent_one_byte_at_a_time() {
    let srv = Server::start(&[]);
    let mut c = Client::raw(srv.addr);
    // CRLF line ends, a leading heart-beat, NUL-terminated body without content-length.
    let wire = b"\r\nCONNECT\r\naccept-version:1.1,1.2\r\nhost:x\r\n\r\n\0\
        SUBSCRIBE\nid:0\ndestination:jms.topic.vdsm_responses\n\n\0\n\
        SEND\ndestination:jms.topic.vdsm_requests\n\n{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"slow\"],\"id\":7}\0";
    for b in wire {
        c.write(&[*b]);
        std::thread::sleep(Duration::from_micros(200));
    }
    let connected = c.expect(Command::Connected);
    assert_eq!(connected.get("version"), Some("1.2"));
    assert_eq!(connected.get("heart-beat"), Some("0,0"));
    assert!(connected.get("server").unwrap().starts_with("rpcmux/"));
    let m = c.expect(Command::Message);
    assert_eq!(body(&m)["result"], "slow");
    assert_eq!(body(&m)["id"], 7);
    assert_eq!(m.get("subscription"), Some("0"));
    assert_eq!(
        m.get("destination"),
        Some(RESPONSES),
        "default reply destination"
    );
}

#[test]
fn several_frames_in_one_write() {
    let srv = Server::start(&[]);
    let mut c = Client::raw(srv.addr);
    let mut wire = BytesMut::new();
    let mut codec = StompCodec::default();
    let frames = [
        Frame::new(Command::Connect).header("accept-version", "1.2"),
        Frame::new(Command::Subscribe)
            .header("id", "r")
            .header("destination", RESPONSES)
            .header("receipt", "s1"),
        request(r#"{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}"#),
        request(
            r#"[{"jsonrpc":"2.0","method":"echo","params":[2],"id":2},{"jsonrpc":"2.0","method":"nope","id":3}]"#,
        ),
        request(r#"{"jsonrpc":"2.0","method":"ping"}"#), // a notification: no reply
        request("not json"),
        Frame::new(Command::Ack).header("id", "whatever"),
        Frame::new(Command::Disconnect).header("receipt", "bye"),
    ];
    for f in &frames {
        codec.encode(f, &mut wire).unwrap();
    }
    c.write(&wire);
    c.expect(Command::Connected);
    assert_eq!(c.expect(Command::Receipt).get("receipt-id"), Some("s1"));
    let mut replies: Vec<_> = (0..3).map(|_| body(&c.expect(Command::Message))).collect();
    replies.sort_by_key(|v| v.to_string());
    assert_eq!(replies[0][0]["result"], 2, "{replies:?}");
    assert_eq!(replies[0][1]["error"]["code"], -32601, "{replies:?}");
    assert_eq!(replies[1]["error"]["code"], -32700, "{replies:?}");
    assert_eq!(replies[2]["result"], 1, "{replies:?}");
    // DISCONNECT's receipt comes after every reply, then the server closes.
    assert_eq!(c.expect(Command::Receipt).get("receipt-id"), Some("bye"));
    c.expect_closed();
}

/// JSON-RPC over STOMP stays 2.0, as VDSM has it: a 1.0 request (no "jsonrpc") is
/// refused with -32600 in 2.0's shape, alone or as a batch member, and runs nothing.
#[test]
fn json_rpc_1_requests_are_refused() {
    let srv = Server::start(&[]);
    let (mut c, _) = Client::open(srv.addr, &[]);
    c.subscribe("r", RESPONSES);
    c.request(r#"{"method":"VM.create","params":["v1-stomp","x",64],"id":1}"#);
    let v = body(&c.expect(Command::Message));
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (1.into(), (-32600).into()),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("STOMP is 2.0"),
        "{v}"
    );
    c.request(r#"[{"method":"ping","params":[],"id":2},{"jsonrpc":"2.0","method":"Host.getVMList","id":3}]"#);
    let v = body(&c.expect(Command::Message));
    assert_eq!(v[0]["error"]["code"], -32600, "{v}");
    assert_eq!(v[1]["jsonrpc"], "2.0", "{v}");
    let vms = v[1]["result"].as_array().unwrap();
    assert!(
        !vms.contains(&"v1-stomp".into()),
        "the refused 1.0 call ran: {v}"
    );
}

#[test]
fn disconnect_receipt_waits_for_calls_in_flight() {
    let srv = Server::start(&[]);
    let (mut c, _) = Client::open(srv.addr, &[]);
    c.subscribe("r", RESPONSES);
    c.request(r#"{"jsonrpc":"2.0","method":"sleep","params":[300],"id":"s"}"#);
    c.send(&Frame::new(Command::Disconnect).header("receipt", "bye"));
    assert_eq!(body(&c.expect(Command::Message))["result"], 300);
    assert_eq!(c.expect(Command::Receipt).get("receipt-id"), Some("bye"));
    c.expect_closed();
}

#[test]
fn heartbeats_both_ways_and_a_silent_peer_is_closed() {
    let srv = Server::start(&[]);
    // A live peer: beats every 500 ms (it asked to send every 100: floored to 1000).
    let live = std::thread::spawn({
        let addr = srv.addr;
        move || {
            let (mut c, connected) = Client::open(addr, &[("heart-beat", "100,0")]);
            assert_eq!(connected.get("heart-beat"), Some("0,1000"));
            for _ in 0..7 {
                std::thread::sleep(Duration::from_millis(500));
                c.write(b"\n");
            }
            c.subscribe("r", RESPONSES);
            c.request(r#"{"jsonrpc":"2.0","method":"ping","id":1}"#);
            assert_eq!(body(&c.expect(Command::Message))["result"], true);
        }
    });
    // A silent peer that promised beats every 1000 ms and wants them every 1000 ms. Its
    // silence is timed from before CONNECT: the server times it from reading CONNECT,
    // and a start taken after CONNECTED came back made the close look early by a hair
    // (1.999 s) on a loaded machine.
    let start = Instant::now();
    let (mut c, connected) = Client::open(srv.addr, &[("heart-beat", "1000,1000")]);
    assert_eq!(connected.get("heart-beat"), Some("1000,1000"));
    let mut beats = Vec::new();
    while let Some(item) = c.item() {
        assert_eq!(item, Item::Heartbeat, "only heart-beats are due");
        beats.push(start.elapsed());
    }
    let closed_after = start.elapsed();
    assert!(
        closed_after >= Duration::from_millis(2000) && closed_after < Duration::from_millis(4000),
        "closed after {closed_after:?}"
    );
    assert!(
        !beats.is_empty() && beats[0] <= Duration::from_millis(1200),
        "{beats:?}"
    );
    assert!(
        srv.wait_log("missed its heart-beats", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
    live.join().unwrap();
}

#[test]
fn missing_and_duplicate_headers_get_error_then_close() {
    let srv = Server::start(&[]);
    let cases: [(Frame, &str); 4] = [
        (
            Frame::new(Command::Subscribe).header("destination", RESPONSES),
            "id",
        ),
        (
            Frame::new(Command::Subscribe).header("id", "a"),
            "destination",
        ),
        (Frame::new(Command::Send).with_body("{}"), "destination"),
        (Frame::new(Command::Unsubscribe), "id"),
    ];
    for (frame, missing) in cases {
        let (mut c, _) = Client::open(srv.addr, &[]);
        c.send(&frame.header("receipt", "r-77"));
        let e = c.expect(Command::Error);
        assert!(error_message(&e).contains(missing), "{e:?}");
        assert_eq!(e.get("receipt-id"), Some("r-77"), "names the failed frame");
        c.expect_closed();
    }
    let (mut c, _) = Client::open(srv.addr, &[]);
    c.subscribe("same", RESPONSES);
    c.send(
        &Frame::new(Command::Subscribe)
            .header("id", "same")
            .header("destination", "jms.queue.events"),
    );
    assert!(error_message(&c.expect(Command::Error)).contains("already in use"));
    c.expect_closed();
}

#[test]
fn protocol_faults_get_error_then_close() {
    let srv = Server::start(&[]);
    let faults: [(&[u8], &str); 5] = [
        // The first frame must be CONNECT or STOMP.
        (
            b"SEND\ndestination:jms.topic.vdsm_requests\n\n{}\0",
            "first frame",
        ),
        // This is not a broker: other destinations do not exist.
        (
            b"SEND\ndestination:jms.queue.elsewhere\n\n{}\0",
            "no such destination",
        ),
        (b"BEGIN\ntransaction:t\n\n\0", "transactions"),
        (b"CONNECT\naccept-version:1.2\n\n\0", "already connected"),
        (
            b"SEND\ndestination:jms.topic.vdsm_requests\nbad\\x:1\n\n\0",
            "escape",
        ),
    ];
    for (i, (wire, why)) in faults.into_iter().enumerate() {
        let mut c = if i == 0 {
            Client::raw(srv.addr)
        } else {
            Client::open(srv.addr, &[]).0
        };
        c.write(wire);
        let e = c.expect(Command::Error);
        assert!(error_message(&e).contains(why), "{why}: {e:?}");
        c.expect_closed();
    }
}

#[test]
fn stomp_1_0_and_1_1_clients_are_refused() {
    let srv = Server::start(&[]);
    for wire in [
        &b"CONNECT\nlogin:x\n\n\0"[..],
        b"STOMP\naccept-version:1.0,1.1\nhost:x\n\n\0",
    ] {
        let mut c = Client::raw(srv.addr);
        c.write(wire);
        let e = c.expect(Command::Error);
        assert!(error_message(&e).contains("only 1.2"), "{e:?}");
        assert_eq!(e.get("version"), Some("1.2"), "names the versions spoken");
        c.expect_closed();
    }
}

#[test]
fn oversized_frame_gets_error_then_close() {
    let srv = Server::start(&["--max-frame", "4096"]);
    let (mut c, _) = Client::open(srv.addr, &[]);
    c.subscribe("r", RESPONSES);
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":1}}"#,
        "x".repeat(10_000)
    );
    // The server may close before taking all of it.
    let mut out = BytesMut::new();
    StompCodec::default()
        .encode(&request(&big), &mut out)
        .unwrap();
    let _ = c.s.write_all(&out);
    let e = c.expect(Command::Error);
    assert!(
        error_message(&e).contains("frame too large (limit 4096"),
        "{e:?}"
    );
    c.expect_closed();
}

#[test]
fn replies_need_a_subscription_on_the_same_connection() {
    let srv = Server::start(&[]);
    // Another connection subscribed to the response destination gets nothing of ours.
    let (mut other, _) = Client::open(srv.addr, &[]);
    other.subscribe("r", RESPONSES);
    let (mut c, _) = Client::open(srv.addr, &[]);
    c.send(
        &request(r#"{"jsonrpc":"2.0","method":"echo","params":["lost"],"id":1}"#)
            .header("receipt", "sent"),
    );
    assert_eq!(c.expect(Command::Receipt).get("receipt-id"), Some("sent"));
    assert!(
        srv.wait_log("reply dropped", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
    // A parent destination covers the reply destination (VDSM's `.` hierarchy).
    c.subscribe("all-topics", "jms.topic");
    c.request(r#"{"jsonrpc":"2.0","method":"echo","params":["found"],"id":2}"#);
    let m = c.expect(Command::Message);
    assert_eq!(body(&m)["result"], "found");
    assert_eq!(m.get("subscription"), Some("all-topics"));
    // The other connection's next frame is its own reply, not ours.
    other.request(r#"{"jsonrpc":"2.0","method":"echo","params":["mine"],"id":1}"#);
    assert_eq!(body(&other.expect(Command::Message))["result"], "mine");
}

#[test]
fn unsubscribe_stops_events() {
    let srv = Server::start(&[]);
    let (mut c, _) = Client::open(srv.addr, &[]);
    c.subscribe("r", RESPONSES);
    c.subscribe("ev", "jms.queue.events");
    let create = |id: &str| {
        let (_, _, b) = http_post(
            srv.addr,
            None,
            format!(r#"{{"jsonrpc":"2.0","method":"VM.create","params":["{id}","n",1],"id":1}}"#)
                .as_bytes(),
        );
        assert_eq!(json(&b)["result"]["vmId"], id);
    };
    create("u1");
    let ev = c.expect(Command::Message);
    assert_eq!(ev.get("subscription"), Some("ev"));
    assert_eq!(ev.get("destination"), Some("jms.queue.events"));
    assert_eq!(body(&ev)["method"], "|virt|VM_status|u1");
    c.send(
        &Frame::new(Command::Unsubscribe)
            .header("id", "ev")
            .header("receipt", "un"),
    );
    c.expect(Command::Receipt);
    create("u2");
    // The reply to a later call arrives first: no event was queued before it.
    c.request(r#"{"jsonrpc":"2.0","method":"ping","id":"after"}"#);
    assert_eq!(body(&c.expect(Command::Message))["id"], "after");
}

#[test]
fn colliding_request_ids_never_cross_connections() {
    let srv = Server::start(&[]);
    const N: usize = 300;
    let clients: Vec<_> = ["alpha", "beta"]
        .into_iter()
        .map(|tag| {
            let addr = srv.addr;
            std::thread::spawn(move || {
                let (mut c, _) = Client::open(addr, &[]);
                c.subscribe("r", RESPONSES);
                let mut wire = BytesMut::new();
                let mut codec = StompCodec::default();
                for id in 0..N {
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","method":"echo","params":[["{tag}",{id}]],"id":{id}}}"#
                    );
                    codec.encode(&request(&body), &mut wire).unwrap();
                }
                c.write(&wire);
                let mut seen = vec![false; N];
                for _ in 0..N {
                    let v = body(&c.expect(Command::Message));
                    let id = v["id"].as_u64().unwrap() as usize;
                    assert_eq!(v["result"], serde_json::json!([tag, id]), "{tag} got {v}");
                    assert!(!std::mem::replace(&mut seen[id], true), "{tag}: twice {id}");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
}
