//! Interoperability details real clients depend on: a VM's status event arrives before
//! the reply of the call that caused it (oVirt's engine, over STOMP with VDSM's layout,
//! and raw-TCP JSON-RPC), XML-RPC replies declare their charset, and `deflate` request
//! bodies (zlib format, what Perl's RPC::XML sends with compression on) are accepted,
//! shown with the real RPC::XML client (Debian: librpc-xml-perl).

use crate::common::hostile::*;
use crate::common::*;
use rpcmux_stomp::{Command, Frame};
use std::process::Command as Process;

/// Calls per check: the order is a race in a server that gets it wrong, so one call
/// proves little.
const ROUNDS: usize = 20;

#[test]
fn stomp_vdsm_layout_event_arrives_before_the_reply() {
    let srv = Server::start_limited(&[]);
    let mut s = Stomp::open(srv.addr).unwrap();
    // VDSM's engine layout: one subscription, to the events queue, which is also where
    // replies are asked to go.
    s.send(
        &Frame::new(Command::Subscribe)
            .header("id", "e")
            .header("destination", EVENTS)
            .header("receipt", "sub"),
    )
    .unwrap();
    assert_eq!(s.frame().unwrap().command, Command::Receipt);
    for i in 0..ROUNDS {
        let vm = format!("vm{i}");
        let call = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"VM.create\",\"params\":{{\"vmID\":\"{vm}\",\"name\":\"web\",\"memSize\":1024}},\"id\":\"{i}\"}}"
        );
        s.call(call.into_bytes(), Some(EVENTS)).unwrap();
        let first = frame_json(&s.frame().expect("first MESSAGE")).unwrap();
        let second = frame_json(&s.frame().expect("second MESSAGE")).unwrap();
        assert_eq!(
            first["method"],
            format!("|virt|VM_status|{vm}"),
            "round {i}: the event must come first; got {first} then {second}"
        );
        assert_eq!(
            second["id"],
            i.to_string(),
            "round {i}: then the reply; got {second}"
        );
        assert!(second["result"].is_object(), "{second}");
    }
}

#[test]
fn raw_tcp_event_arrives_before_the_reply() {
    let srv = Server::start_limited(&[]);
    let mut c = Lines::connect(srv.addr).unwrap();
    c.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"subscribe\",\"params\":[\"*\"],\"id\":\"sub\"}\n")
        .unwrap();
    assert!(c.json(64 * KIB).unwrap()["result"].is_i64());
    for i in 0..ROUNDS {
        let vm = format!("vm{i}");
        c.send(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"VM.create\",\"params\":[\"{vm}\",\"web\",1024],\"id\":{i}}}\n"
            )
            .as_bytes(),
        )
        .unwrap();
        let first = c.json(64 * KIB).expect("first line");
        let second = c.json(64 * KIB).expect("second line");
        assert_eq!(
            first["method"],
            format!("|virt|VM_status|{vm}"),
            "round {i}: the event must come first; got {first} then {second}"
        );
        assert_eq!(second["id"], i, "round {i}: then the reply; got {second}");
    }
}

#[test]
fn xmlrpc_replies_declare_utf8() {
    let srv = Server::start_limited(&[]);
    for (what, body) in [
        ("a result", xmlrpc_call("ping", "")),
        ("a fault", xmlrpc_call("no.such.verb", "")),
        ("an unparsable body", b"<methodCall><oops".to_vec()),
    ] {
        let r = post(srv.addr, &[XML], &body, 64 * KIB).expect("reply");
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("text/xml; charset=utf-8"),
            "{what}: {}",
            r.head
        );
    }
}

#[test]
fn deflate_request_bodies_are_accepted() {
    let srv = Server::start_limited(&[]);
    let text = "d".repeat(3000);
    let xml = xmlrpc_call(
        "echo",
        &format!("<param><value><string>{text}</string></value></param>"),
    );
    let r = post(
        srv.addr,
        &[XML, ("Content-Encoding", "deflate")],
        &zlib(&xml),
        64 * KIB,
    )
    .expect("XML-RPC reply");
    assert_eq!(r.status, 200, "{} {}", r.head, r.text());
    assert_eq!(fault_code(&r.text()), None, "{}", r.text());
    assert!(r.text().contains(&text));

    let json = jsonrpc("echo", &format!("[\"{text}\"]"), "1");
    let r = post(
        srv.addr,
        &[JSON, ("Content-Encoding", "deflate")],
        &zlib(&json),
        64 * KIB,
    )
    .expect("JSON-RPC reply");
    assert_eq!(r.status, 200, "{} {}", r.head, r.text());
    assert_eq!(r.json().unwrap()["result"], text.as_str());
}

/// The real Perl client, compression forced on (`compress_requests`, threshold 1 byte):
/// its request bodies are `Content-Encoding: deflate`, zlib format
/// (`Compress::Zlib::compress`).
const PERL_CLIENT: &str = r#"
use strict;
use warnings;
use RPC::XML;
use RPC::XML::Client;
my $c = RPC::XML::Client->new($ARGV[0]);
die "no compression support (Compress::Zlib)\n" unless $c->compress;
$c->compress_requests(1);
$c->compress_thresh(1);
my $big = 'perl' x 2500;
my $r = $c->send_request('echo', RPC::XML::string->new($big));
die "transport error: $r\n" unless ref $r;
die "fault: " . $r->string . "\n" if $r->is_fault;
die "echo differs\n" unless $r->value eq $big;
$r = $c->send_request('ping');
die "ping: transport error: $r\n" unless ref $r;
die "ping: fault: " . $r->string . "\n" if $r->is_fault;
print "ok RPC::XML $RPC::XML::VERSION compressed=" . $c->compress . "\n";
"#;

#[test]
fn perl_rpc_xml_client_with_compression_on() {
    let probe = Process::new("perl")
        .args(["-MRPC::XML::Client", "-MCompress::Zlib", "-e", "1"])
        .output()
        .expect("perl");
    assert!(
        probe.status.success(),
        "Perl's RPC::XML is missing: apt-get install librpc-xml-perl ({})",
        String::from_utf8_lossy(&probe.stderr)
    );
    let srv = Server::start_limited(&[]);
    let out = Process::new("timeout")
        .args(["30", "perl", "-e", PERL_CLIENT, &srv.url()])
        .output()
        .expect("run perl");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("ok RPC::XML"),
        "RPC::XML client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
}
