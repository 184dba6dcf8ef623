//! Hostile clients that make a small request cost the server a lot: a gzip body
//! inflating to an 8.4-million-member batch, oversized batches and multicalls, replies
//! over `max_reply`, a STOMP reply fanned out to 256 subscriptions, and `subscribe`
//! called without end. Each test runs the real binary under an address-space limit
//! (`Server::start_limited`) and asserts the attacker's error, the server's peak RSS,
//! and that a bystander is still answered.

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use common::*;
use hostile::*;
use rpcmux_stomp::{Command, Frame};
use rpcmux_value::Value;
use std::sync::OnceLock;
use std::time::Duration;

/// An attacker waits this long for its (error) reply: the server is a debug build and
/// inflating and refusing 16 MiB takes it a while; a bystander still gets ANSWER_TIMEOUT.
const ATTACK_TIMEOUT: Duration = Duration::from_secs(60);

/// `[1,1,...]` of 16 MiB - 1 bytes (8,388,607 members: each an invalid request, so each
/// would get its own ~70-byte error), gzipped to ~16 KB. Built once per test binary.
fn batch_bomb() -> &'static [u8] {
    static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
    BOMB.get_or_init(|| {
        let z = gzip(&ones_array(16 * MIB - 1));
        eprintln!("batch bomb: {} bytes of gzip", z.len());
        z
    })
}

/// Send the bomb; the reply must be one JSON-RPC error -32600 (the whole batch refused)
/// in an HTTP 200, and small.
fn throw_batch_bomb(addr: std::net::SocketAddr) -> Result<(), String> {
    let r = post_within(addr, &[JSON, GZIP], batch_bomb(), 64 * KIB, ATTACK_TIMEOUT)?;
    let v = r.json()?;
    if r.status != 200 || !v.is_object() || error_code(&v) != Some(-32600) {
        return Err(format!(
            "wanted HTTP 200 with one error -32600, got {} {}",
            r.status,
            excerpt(&r.body, 300)
        ));
    }
    Ok(())
}

/// Peak RSS bound for one batch bomb: the inflated 16 MiB body and what refusing it
/// takes (the unfixed server built a 914 MB reply).
const BOMB_PEAK_MIB: u64 = 256;
/// Four bombs at once: four inflated bodies at most (the unfixed server died).
const FOUR_BOMBS_PEAK_MIB: u64 = 384;

#[test]
fn gzip_batch_bomb_gets_one_error_with_bounded_memory() {
    let mut srv = Server::start_limited(&[]);
    let bomb = batch_bomb();
    assert!(
        bomb.len() < 64 * KIB,
        "the bomb is small: {} bytes",
        bomb.len()
    );
    let bystander = Bystander::start(ping_http, srv.addr, Duration::from_millis(50), 2000);
    let attack = throw_batch_bomb(srv.addr);
    let seen = bystander.finish();
    attack.expect("the batch bomb's reply");
    assert_peak_rss(&mut srv, BOMB_PEAK_MIB, "one gzip batch bomb");
    assert_all_answered(&seen, 1, "bystander during the batch bomb");
    ping_http(srv.addr).expect("ping after the attack");
}

#[test]
fn four_gzip_batch_bombs_in_parallel_leave_the_server_alive() {
    let mut srv = Server::start_limited(&[]);
    let _ = batch_bomb();
    let bystander = Bystander::start(ping_http, srv.addr, Duration::from_millis(50), 4000);
    let attackers: Vec<_> = (0..4)
        .map(|_| {
            let addr = srv.addr;
            std::thread::spawn(move || throw_batch_bomb(addr))
        })
        .collect();
    let results: Vec<_> = attackers.into_iter().map(|h| join(h, "attacker")).collect();
    let seen = bystander.finish();
    assert_alive(&mut srv, "four batch bombs");
    for (i, r) in results.iter().enumerate() {
        assert!(r.is_ok(), "attacker {i}: {}", r.as_ref().unwrap_err());
    }
    assert_peak_rss(
        &mut srv,
        FOUR_BOMBS_PEAK_MIB,
        "four gzip batch bombs at once",
    );
    assert_all_answered(&seen, 1, "bystander during four batch bombs");
    ping_http(srv.addr).expect("ping after the attack");
}

/// `[{ping},{ping},...]` with `n` members, ids 0..n.
fn ping_batch(n: usize) -> Vec<u8> {
    let members: Vec<String> = (0..n)
        .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":{i}}}"))
        .collect();
    format!("[{}]", members.join(",")).into_bytes()
}

#[test]
fn batch_of_1000_is_answered_and_1001_refused_over_http_and_tcp() {
    let mut srv = Server::start_limited(&[]);
    // HTTP
    let r = post(srv.addr, &[JSON], &ping_batch(1000), 4 * MIB).expect("1000-member batch");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json().unwrap();
    let arr = v.as_array().expect("a batch is answered with an array");
    assert_eq!(arr.len(), 1000);
    assert!(
        arr.iter().all(|m| m["result"] == true),
        "{}",
        excerpt(&r.body, 300)
    );

    let r = post(srv.addr, &[JSON], &ping_batch(1001), 4 * MIB).expect("1001-member batch");
    assert_eq!(r.status, 200, "{}", excerpt(&r.body, 300));
    let v = r.json().unwrap();
    assert!(
        v.is_object() && error_code(&v) == Some(-32600),
        "a 1001-member batch is refused whole with one -32600 error: {}",
        excerpt(&r.body, 300)
    );

    // raw TCP: the refusal is one error line, and the connection goes on.
    let mut c = Lines::connect(srv.addr).unwrap();
    let mut req = ping_batch(1001);
    req.push(b'\n');
    c.send(&req).unwrap();
    let v = c.json(4 * MIB).expect("reply to a 1001-member batch");
    assert!(
        v.is_object() && error_code(&v) == Some(-32600),
        "raw TCP: one -32600 error for the whole batch: {}",
        excerpt(v.to_string().as_bytes(), 300)
    );
    let mut req = ping_batch(1000);
    req.push(b'\n');
    c.send(&req).unwrap();
    let v = c.json(4 * MIB).expect("reply to a 1000-member batch");
    assert_eq!(v.as_array().map(Vec::len), Some(1000));
    assert_alive(&mut srv, "batch limits");
}

/// `system.multicall` over XML-RPC with `n` ping calls.
fn multicall(n: usize) -> Vec<u8> {
    let call = "<value><struct><member><name>methodName</name><value><string>ping</string></value></member><member><name>params</name><value><array><data/></array></value></member></struct></value>";
    xmlrpc_call(
        "system.multicall",
        &format!(
            "<param><value><array><data>{}</data></array></value></param>",
            call.repeat(n)
        ),
    )
}

#[test]
fn multicall_of_1001_calls_is_refused_1000_answered() {
    let mut srv = Server::start_limited(&[]);
    let r = post(srv.addr, &[XML], &multicall(1000), 4 * MIB).expect("1000 calls");
    let text = r.text();
    assert_eq!(r.status, 200);
    assert_eq!(fault_code(&text), None, "{}", excerpt(&r.body, 300));
    assert_eq!(
        text.matches("<boolean>1</boolean>").count(),
        1000,
        "{}",
        excerpt(&r.body, 300)
    );
    let r = post(srv.addr, &[XML], &multicall(1001), 4 * MIB).expect("1001 calls");
    assert_eq!(r.status, 200);
    assert_eq!(
        fault_code(&r.text()),
        Some(-32600),
        "a 1001-call multicall gets fault -32600: {}",
        excerpt(&r.body, 300)
    );
    // The same through JSON-RPC.
    let calls: Vec<&str> = vec!["{\"methodName\":\"ping\",\"params\":[]}"; 1001];
    let body = jsonrpc("system.multicall", &format!("[[{}]]", calls.join(",")), "1");
    let r = post(srv.addr, &[JSON], &body, 4 * MIB).expect("1001 calls over JSON-RPC");
    let v = r.json().unwrap();
    assert_eq!(error_code(&v), Some(-32600), "{}", excerpt(&r.body, 300));
    assert_alive(&mut srv, "multicall limits");
}

/// Error code for a reply over `max_reply`.
const REPLY_TOO_LARGE: i64 = -32003;

#[test]
fn reply_over_max_reply_is_an_error_in_each_protocol() {
    let mut srv = Server::start_limited(&["--max-reply", "1048576"]);
    let big = "x".repeat(2 * MIB);
    let big_json = format!("[\"{big}\"]");
    let cap = 256 * KIB;

    // JSON-RPC over HTTP
    let r = post(srv.addr, &[JSON], &jsonrpc("echo", &big_json, "7"), cap).expect("JSON-RPC/HTTP");
    let v = r.json().unwrap();
    assert_eq!(
        error_code(&v),
        Some(REPLY_TOO_LARGE),
        "JSON-RPC/HTTP: {}",
        excerpt(&r.body, 300)
    );
    assert_eq!(v["id"], 7);

    // XML-RPC
    let body = xmlrpc_call(
        "echo",
        &format!("<param><value><string>{big}</string></value></param>"),
    );
    let r = post(srv.addr, &[XML], &body, cap).expect("XML-RPC");
    assert_eq!(
        fault_code(&r.text()),
        Some(REPLY_TOO_LARGE),
        "XML-RPC: {}",
        excerpt(&r.body, 300)
    );

    // raw-TCP JSON-RPC: an error line, and the connection goes on.
    let mut c = Lines::connect(srv.addr).unwrap();
    let mut req = jsonrpc("echo", &big_json, "8");
    req.push(b'\n');
    c.send(&req).unwrap();
    let v = c.json(cap).expect("raw TCP reply");
    assert_eq!(error_code(&v), Some(REPLY_TOO_LARGE), "raw TCP: {v}");
    assert_eq!(v["id"], 8);
    c.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":9}\n")
        .unwrap();
    assert_eq!(c.json(cap).unwrap()["result"], true);

    // msgpack-rpc
    let mut m = Msgpack::connect(srv.addr).unwrap();
    m.call(5, "echo", &[Value::String(big.clone())]).unwrap();
    let (id, err, _) = m.reply().expect("msgpack-rpc reply");
    assert_eq!(id, 5);
    assert_eq!(
        msgpack_error_code(&err),
        Some(REPLY_TOO_LARGE),
        "msgpack-rpc: {err:?}"
    );

    // STOMP
    let mut s = Stomp::open(srv.addr).unwrap();
    s.subscribe("r", RESPONSES).unwrap();
    s.call(jsonrpc("echo", &big_json, "\"s\""), None).unwrap();
    let f = s.frame().expect("STOMP reply");
    assert_eq!(f.command, Command::Message, "{f:?}");
    let v = frame_json(&f).unwrap();
    assert_eq!(error_code(&v), Some(REPLY_TOO_LARGE), "STOMP: {v}");
    assert_alive(&mut srv, "max_reply");
}

/// Peak RSS bound for one 1 MiB echo over STOMP delivered to 256 subscriptions: request,
/// parsed value, one encoded reply and 256 MESSAGE heads (a copy per delivery: 256 MiB).
const STOMP_FANOUT_PEAK_MIB: u64 = 128;

#[test]
fn stomp_reply_goes_to_every_covering_subscription_sharing_one_copy() {
    let mut srv = Server::start_limited(&[]);
    let mut s = Stomp::open(srv.addr).unwrap();
    // 256 subscriptions (the documented per-connection cap) that all cover the reply
    // destination: the exact name and its ancestors. STOMP 1.2 delivers a message to
    // each; the server must not hold 256 copies of the body to do it.
    let dests = [RESPONSES, "jms.topic", "jms"];
    for i in 0..256 {
        let mut f = Frame::new(Command::Subscribe)
            .header("id", format!("s{i}"))
            .header("destination", dests[i % dests.len()]);
        if i == 255 {
            f.push_header("receipt", "subscribed");
        }
        s.send(&f).unwrap();
    }
    let f = s.frame().expect("receipt for the SUBSCRIBEs");
    assert_eq!(
        f.command,
        Command::Receipt,
        "{f:?}: {}",
        excerpt(&f.body, 200)
    );

    // 1 MiB, 256 deliveries: one copy per subscription would be 256 MiB in the server.
    let big = "y".repeat(MIB);
    s.call(jsonrpc("echo", &format!("[\"{big}\"]"), "\"big\""), None)
        .unwrap();
    drop(big);
    let mut subs = std::collections::BTreeSet::new();
    let mut first_body = None;
    for n in 0..256 {
        let f = s
            .frame()
            .unwrap_or_else(|e| panic!("delivery {n} of the echo's reply: {e}"));
        assert_eq!(f.command, Command::Message, "{f:?}");
        assert!(
            subs.insert(f.get("subscription").unwrap().to_owned()),
            "two deliveries to one subscription"
        );
        match &first_body {
            None => {
                let v = frame_json(&f).unwrap();
                assert_eq!(v["id"], "big");
                assert_eq!(v["result"].as_str().map(str::len), Some(MIB));
                first_body = Some(f.body.clone());
            }
            Some(b) => assert!(f.body == *b, "delivery {n} differs from the first"),
        }
    }
    assert_eq!(subs.len(), 256, "every covering subscription got the reply");
    s.call(jsonrpc("ping", "[]", "\"after\""), None).unwrap();
    let f = s.frame().unwrap();
    let v = frame_json(&f).unwrap();
    assert_eq!(v["id"], "after", "{v}");
    assert_peak_rss(
        &mut srv,
        STOMP_FANOUT_PEAK_MIB,
        "1 MiB STOMP echo to 256 subscriptions",
    );
}

/// Error code for a `subscribe` past `max_subscriptions`.
const TOO_MANY_SUBSCRIPTIONS: i64 = -32002;

fn subscribe_line(id: usize) -> Vec<u8> {
    let mut v = jsonrpc("subscribe", "[\"*\"]", &id.to_string());
    v.push(b'\n');
    v
}

#[test]
fn subscribe_is_capped_per_connection_and_closing_many_is_cheap() {
    let mut srv = Server::start_limited(&[]);
    let mut c = Lines::connect(srv.addr).unwrap();
    for i in 1..=64 {
        c.send(&subscribe_line(i)).unwrap();
        let v = c.json(64 * KIB).unwrap();
        assert!(v["result"].is_i64(), "subscribe #{i}: {v}");
    }
    c.send(&subscribe_line(65)).unwrap();
    let v = c.json(64 * KIB).unwrap();
    assert_eq!(
        error_code(&v),
        Some(TOO_MANY_SUBSCRIPTIONS),
        "the 65th subscribe on one connection: {v}"
    );
    // The connection is still usable.
    c.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":\"p\"}\n")
        .unwrap();
    let v = c.json(64 * KIB).unwrap();
    assert_eq!(v["result"], true, "{v}");
    drop(c);

    // One listener with a single subscription, then a connection holding 64 that closes;
    // publishing afterwards works and the listener gets each event once.
    let mut listener = Lines::connect(srv.addr).unwrap();
    listener.send(&subscribe_line(1)).unwrap();
    assert!(listener.json(64 * KIB).unwrap()["result"].is_i64());
    let mut many = Lines::connect(srv.addr).unwrap();
    for i in 1..=64 {
        many.send(&subscribe_line(i)).unwrap();
    }
    for _ in 1..=64 {
        let v = many.json(64 * KIB).unwrap();
        assert!(v["result"].is_i64(), "{v}");
    }
    drop(many);
    let mut caller = Lines::connect(srv.addr).unwrap();
    for vm in ["a", "b"] {
        caller
            .send(
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"VM.create\",\"params\":[\"{vm}\",\"n\",64],\"id\":\"{vm}\"}}\n"
                )
                .as_bytes(),
            )
            .unwrap();
        let v = caller.json(64 * KIB).unwrap();
        assert_eq!(v["id"], vm, "{v}");
        assert!(v["result"].is_object(), "{v}");
        let ev = listener.json(64 * KIB).expect("the event");
        assert_eq!(ev["method"], format!("|virt|VM_status|{vm}"), "{ev}");
    }
    assert_alive(&mut srv, "subscriptions");
}
