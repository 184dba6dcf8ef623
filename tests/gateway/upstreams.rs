//! The gateway against a real upstream, Python's SimpleXMLRPCServer with introspection
//! and multicall (tests/python/xmlrpc_upstream.py), started and killed by each test:
//! verbs discovered and served on every protocol, values keeping their types, faults
//! keeping their code, a hanging, a full, a down and a restarting upstream.

use crate::common;
use crate::common::pki;
use crate::common::Server;
use crate::support::{client, config_file, free_port, gateway_with_config, PyUpstream};
use rpcmux::client::ClientProto;
use rpcmux::{vstruct, DateTime, Params, RpcError, Value};
use std::time::{Duration, Instant};

fn pos(v: Vec<Value>) -> Params {
    Params::Positional(v)
}

/// Start rpcmux (no demo verbs) with `upstream` flags.
fn gateway(upstreams: &[String]) -> Server {
    let mut args = vec!["--no-demo"];
    for u in upstreams {
        args.extend(["--upstream", u.as_str()]);
    }
    Server::start(&args)
}

/// The names in a `system.listMethods` answer.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

async fn call(
    proto: ClientProto,
    srv: &Server,
    method: &str,
    params: Vec<Value>,
) -> Result<Value, RpcError> {
    client(proto, srv.addr)
        .await
        .call(method, pos(params))
        .await
        .unwrap_or_else(|e| panic!("{proto} {method}: no reply: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_verbs_on_every_protocol_with_types_and_faults() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway(&[format!("py={}", py.url())]);
    let when = DateTime::from_ymd_hms(2026, 12, 3, 7, 30, 15).unwrap();
    // What JSON can carry as itself (no dateTime or bytes type).
    let plain = vstruct! {
        "int" => 7,
        "negative" => -2147483648i64,
        "double" => 2.5,
        "bool" => true,
        "string" => "é <&> \u{1F600}",
        "nil" => Value::Nil,
        "array" => Value::Array(vec![1.into(), "two".into(), Value::Array(vec![])]),
        "struct" => vstruct! { "inner" => false },
    };
    let mut typed = plain.clone();
    if let Value::Struct(m) = &mut typed {
        m.insert("when", Value::DateTime(when));
        m.insert("bytes", Value::Bytes(vec![0, 1, 2, 255]));
    }
    for proto in ClientProto::ALL {
        let c = client(proto, srv.addr).await;
        let r = c
            .call("py.add", pos(vec![2.into(), 3.into()]))
            .await
            .unwrap();
        assert_eq!(r, Ok(Value::Int(5)), "{proto}");
        let r = c
            .call("py.add", pos(vec![1.5.into(), 2.25.into()]))
            .await
            .unwrap();
        assert_eq!(r, Ok(Value::Double(3.75)), "{proto}");
        let r = c.call("py.echo", pos(vec![plain.clone()])).await.unwrap();
        assert_eq!(r, Ok(plain.clone()), "{proto}");
        if matches!(proto, ClientProto::Xmlrpc | ClientProto::Msgpack) {
            // dateTime.iso8601 and base64 to the upstream, msgpack timestamp and bin back.
            let r = c.call("py.echo", pos(vec![typed.clone()])).await.unwrap();
            assert_eq!(r, Ok(typed.clone()), "{proto}");
        }
        let r = c
            .call("py.fail", pos(vec![42.into(), "no such VM".into()]))
            .await
            .unwrap();
        assert_eq!(
            r,
            Err(RpcError::new(42, "no such VM")),
            "{proto}: the fault kept"
        );
    }
    // Named parameters cannot reach an XML-RPC upstream: refused, not mangled.
    let c = client(ClientProto::Jsonrpc, srv.addr).await;
    let mut named = rpcmux::Map::new();
    named.insert("a", 1.into());
    let r = c.call("py.add", Params::Named(named)).await.unwrap();
    assert_eq!(r.unwrap_err().code, -32602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_help_and_names_show_through_introspection() {
    let py = PyUpstream::start(0, "a");
    let srv = gateway(&[format!("py={}", py.url())]);
    let list = call(ClientProto::Xmlrpc, &srv, "system.listMethods", vec![])
        .await
        .unwrap();
    let names = names(&list);
    for n in ["py.add", "py.echo", "py.fail", "py.hang", "py.whoami"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("py.system.")),
        "the upstream's own introspection is not forwarded: {names:?}"
    );
    let help = call(
        ClientProto::Jsonrpc,
        &srv,
        "system.methodHelp",
        vec!["py.add".into()],
    )
    .await;
    assert_eq!(help, Ok(Value::from("Add two numbers.")));
    // Python answers "signatures not supported": rpcmux shows none rather than inventing.
    let sig = call(
        ClientProto::Jsonrpc,
        &srv,
        "system.methodSignature",
        vec!["py.add".into()],
    )
    .await
    .unwrap();
    assert_eq!(sig, Value::Array(vec![Value::Array(vec!["any".into()])]));
    // rpcmux's own multicall runs forwarded verbs.
    let calls = Value::Array(vec![
        vstruct! { "methodName" => "py.add", "params" => Value::Array(vec![1.into(), 2.into()]) },
        vstruct! { "methodName" => "py.fail", "params" => Value::Array(vec![3.into(), "x".into()]) },
    ]);
    let r = call(ClientProto::Xmlrpc, &srv, "system.multicall", vec![calls])
        .await
        .unwrap();
    assert_eq!(r.as_array().unwrap()[0], Value::Array(vec![3.into()]));
    assert_eq!(
        r.as_array().unwrap()[1].get("faultCode"),
        Some(&Value::Int(3))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_taken_by_rust_verbs_are_skipped() {
    let py = PyUpstream::start(0, "python");
    // The demo verbs are on: the demo's whoami and echo win, the rest is Python's.
    let url = py.url();
    let srv = Server::start(&["--upstream", &url]);
    let who = call(ClientProto::Jsonrpc, &srv, "whoami", vec![])
        .await
        .unwrap();
    assert_ne!(who, Value::from("python"), "the Rust verb answers");
    let r = call(ClientProto::Msgpack, &srv, "add", vec![40.into(), 2.into()]).await;
    assert_eq!(r, Ok(Value::Int(42)));
    assert!(srv.wait_log("the name is taken", Duration::from_secs(2)));
    assert!(srv.log().contains("verb=whoami"), "{}", srv.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_upstream_times_out_and_a_full_one_refuses() {
    let py = PyUpstream::start(0, "a");
    let toml = format!(
        "[[upstream]]\nurl = \"{u}\"\nprefix = \"py\"\ntimeout = 1.0\n\n\
         [[upstream]]\nurl = \"{u}\"\nprefix = \"one\"\nmax_in_flight = 1\n",
        u = py.url()
    );
    let srv = gateway_with_config(&toml);
    let addr = srv.addr;
    let hang = tokio::spawn(async move {
        let c = client(ClientProto::Msgpack, addr).await;
        let t0 = Instant::now();
        let r = c.call("py.hang", pos(vec![10.into()])).await.unwrap();
        (r, t0.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Meanwhile other calls to the same upstream answer at once.
    let c = client(ClientProto::Jsonrpc, srv.addr).await;
    for i in 0..5 {
        let t0 = Instant::now();
        let r = c.call("py.echo", pos(vec![i.into()])).await.unwrap();
        assert_eq!(r, Ok(Value::Int(i)));
        assert!(
            t0.elapsed() < Duration::from_millis(800),
            "{:?}",
            t0.elapsed()
        );
    }
    let (r, took) = hang.await.unwrap();
    let e = r.unwrap_err();
    assert_eq!(e.code, rpcmux::codes::ERR_UPSTREAM_TIMEOUT, "{e:?}");
    assert!(
        e.message.contains("py.hang") || e.message.contains("hang"),
        "{e:?}"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // `one` takes one call at a time: a second is refused while the first runs.
    let busy = tokio::spawn(async move {
        let c = client(ClientProto::Msgpack, addr).await;
        c.call("one.hang", pos(vec![2.into()])).await.unwrap()
    });
    // Ample time for the hanging call to reach the upstream, well within its 2 s.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let r = c.call("one.echo", pos(vec![1.into()])).await.unwrap();
    assert_eq!(r.unwrap_err().code, rpcmux::codes::ERR_UPSTREAM_OVERLOADED);
    assert_eq!(busy.await.unwrap(), Ok(Value::Int(2)));
    let r = c.call("one.echo", pos(vec![1.into()])).await.unwrap();
    assert_eq!(r, Ok(Value::Int(1)), "free again once the first call ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_address_fails_over_then_the_documented_error() {
    let (a, b) = (PyUpstream::start(0, "a"), PyUpstream::start(0, "b"));
    let dead = format!("xmlrpc+http://127.0.0.1:{}/RPC2", free_port());
    let toml = format!(
        "[[upstream]]\nurl = [\"{dead}\", \"{}\"]\nprefix = \"first\"\n\n\
         [[upstream]]\nurl = [\"{}\", \"{}\"]\nprefix = \"pair\"\nidempotent = [\"whoami\"]\n",
        a.url(),
        a.url(),
        b.url()
    );
    let srv = gateway_with_config(&toml);
    let c = client(ClientProto::Stomp, srv.addr).await;
    // The first address refuses connections: every call (idempotent or not) goes on.
    for _ in 0..3 {
        let r = c.call("first.add", pos(vec![1.into(), 1.into()])).await;
        assert_eq!(r.unwrap(), Ok(Value::Int(2)));
    }
    assert_eq!(
        c.call("pair.whoami", pos(vec![])).await.unwrap(),
        Ok(Value::from("a"))
    );
    a.kill();
    // The pair's first address is gone: its calls go to the second.
    assert_eq!(
        c.call("pair.whoami", pos(vec![])).await.unwrap(),
        Ok(Value::from("b"))
    );
    // `first` has no address left.
    let e = c
        .call("first.add", pos(vec![1.into(), 1.into()]))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.code, rpcmux::codes::ERR_UPSTREAM_UNREACHABLE, "{e:?}");
    assert!(e.message.contains(&dead), "names each address: {e:?}");
    drop(b);
    let e = c
        .call("pair.whoami", pos(vec![]))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.code, rpcmux::codes::ERR_UPSTREAM_UNREACHABLE, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_resume_after_the_upstream_restarts() {
    let py = PyUpstream::start(0, "first life");
    let port = py.port;
    let srv = gateway(&[format!("py={}", py.url())]);
    for proto in [ClientProto::Jsonrpc, ClientProto::Msgpack] {
        let r = call(proto, &srv, "py.whoami", vec![]).await;
        assert_eq!(r, Ok(Value::from("first life")));
    }
    py.kill();
    let r = call(ClientProto::Jsonrpc, &srv, "py.whoami", vec![]).await;
    assert_eq!(r.unwrap_err().code, rpcmux::codes::ERR_UPSTREAM_UNREACHABLE);
    let _py = PyUpstream::start(port, "second life");
    // The pooled connections died with the first process; the first call after the
    // restart opens a new one and answers.
    for proto in [ClientProto::Jsonrpc, ClientProto::Msgpack] {
        let r = call(proto, &srv, "py.whoami", vec![]).await;
        assert_eq!(r, Ok(Value::from("second life")), "{proto}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_down_at_startup() {
    let dead = format!("xmlrpc+http://127.0.0.1:{}/RPC2", free_port());
    // No list to fall back on: startup fails and names the upstream.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("down={dead}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("rpcmux: "))
        .unwrap_or_else(|| panic!("{err}"));
    // It says the upstream is down, names its URL once, and no `methods` hint (that is
    // for an upstream that answers but cannot list its verbs).
    assert!(
        line.starts_with("rpcmux: upstream down is down: "),
        "{line}"
    );
    assert!(line.contains("Connection refused"), "{line}");
    assert_eq!(line.matches(&dead).count(), 1, "{line}");
    assert!(!line.contains("methods"), "{line}");
    // With `methods`, it starts, and the verbs answer once the upstream is up.
    let port = free_port();
    let toml = format!(
        "[[upstream]]\nurl = \"xmlrpc+http://127.0.0.1:{port}/RPC2\"\nmethods = [\"add\"]\n"
    );
    let srv = gateway_with_config(&toml);
    let r = call(ClientProto::Msgpack, &srv, "add", vec![1.into(), 2.into()]).await;
    assert_eq!(r.unwrap_err().code, rpcmux::codes::ERR_UPSTREAM_UNREACHABLE);
    let _py = PyUpstream::start(port, "late");
    let r = call(ClientProto::Msgpack, &srv, "add", vec![1.into(), 2.into()]).await;
    assert_eq!(r, Ok(Value::Int(3)));
}

/// Another rpcmux (demo verbs on) as the upstream, over each of its protocols: the
/// stream pools pipeline, JSON-RPC upstreams take named parameters, and the
/// upstream's `subscribe`/`unsubscribe` lose to the gateway's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpcmux_upstreams_over_msgpack_json_tcp_and_json_http() {
    let up = Server::start(&[]);
    let a = up.addr;
    let srv = gateway(&[
        format!("m=msgpack+tcp://{a}"),
        format!("t=jsonrpc+tcp://{a}"),
        format!("h=jsonrpc+http://{a}/"),
    ]);
    let when = DateTime::from_ymd_hms(1999, 12, 31, 23, 59, 59).unwrap();
    let typed = vstruct! {
        "when" => Value::DateTime(when),
        "bytes" => Value::Bytes(vec![0, 159, 146, 150]),
        "big" => i64::MAX,
        "nil" => Value::Nil,
    };
    let c = client(ClientProto::Msgpack, srv.addr).await;
    let r = c.call("m.echo", pos(vec![typed.clone()])).await.unwrap();
    assert_eq!(
        r,
        Ok(typed),
        "msgpack to msgpack keeps timestamp, bin and i64"
    );
    // Pipelined: 64 calls at once on one client connection, over the pooled ones.
    let calls = (0..64).map(|i| {
        let c = &c;
        async move { c.call("m.echo", pos(vec![Value::Int(i)])).await.unwrap() }
    });
    let replies = futures_util::future::join_all(calls).await;
    for (i, r) in replies.into_iter().enumerate() {
        assert_eq!(r, Ok(Value::Int(i as i64)));
    }
    let j = client(ClientProto::Stomp, srv.addr).await;
    for prefix in ["t", "h"] {
        let mut named = rpcmux::Map::new();
        named.insert("vmID", format!("vm-{prefix}").into());
        named.insert("name", "web".into());
        let r = j
            .call(&format!("{prefix}.VM.create"), Params::Named(named))
            .await
            .unwrap();
        assert!(
            r.is_ok(),
            "{prefix}: named params reach a JSON-RPC upstream: {r:?}"
        );
        let r = j
            .call(
                &format!("{prefix}.VM.destroy"),
                pos(vec![format!("vm-{prefix}").into()]),
            )
            .await
            .unwrap();
        assert!(r.is_ok(), "{prefix}: {r:?}");
        // The upstream's parameter errors are its own, passed on.
        let r = j
            .call(&format!("{prefix}.sleep"), pos(vec![]))
            .await
            .unwrap();
        assert_eq!(r.unwrap_err().code, -32602, "{prefix}");
    }
    let list = call(ClientProto::Jsonrpc, &srv, "system.listMethods", vec![])
        .await
        .unwrap();
    let names = names(&list);
    assert!(
        names.contains(&"m.subscribe"),
        "prefixed, so not taken: {names:?}"
    );
    assert!(
        names.contains(&"h.VM.create") && names.contains(&"t.ping"),
        "{names:?}"
    );
}

/// HTTP upstreams get the caller's address as `X-Forwarded-For`: the socket peer, or
/// the client a trusted PROXY header names; unless the upstream is told not to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_upstreams_get_x_forwarded_for() {
    let py = PyUpstream::start(0, "a");
    let toml = format!(
        "proxy_from = [\"127.0.0.1/32\"]\n\
         [[upstream]]\nurl = \"{u}\"\nprefix = \"py\"\n\n\
         [[upstream]]\nurl = \"{u}\"\nprefix = \"anon\"\nforwarded_for = false\n",
        u = py.url()
    );
    let srv = gateway_with_config(&toml);
    let r = call(ClientProto::Msgpack, &srv, "py.forwarded_for", vec![]).await;
    assert_eq!(r, Ok(Value::from("127.0.0.1")));
    let r = call(ClientProto::Msgpack, &srv, "anon.forwarded_for", vec![]).await;
    assert_eq!(r, Ok(Value::Nil), "forwarded_for = false");
    // Through a balancer that sends a PROXY header: the client it names.
    let body = br#"{"jsonrpc":"2.0","method":"py.forwarded_for","id":1}"#;
    let mut req = format!(
        "PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\nPOST / HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    let addr = srv.addr;
    let raw = tokio::task::spawn_blocking(move || common::exchange(addr, &req))
        .await
        .unwrap();
    let (status, _, body) = common::parse_http(&raw);
    assert_eq!(status, 200);
    assert_eq!(common::json(&body)["result"], "203.0.113.7");
}

/// HTTPS upstreams: verified against `tls_ca`; a certificate from another CA fails the
/// connection (here at startup, so startup fails and says why).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_upstreams_are_verified_against_tls_ca() {
    let pki = pki::Pki::new();
    let mut flags: Vec<String> = pki.server_flags();
    flags.extend(["--tls".into(), "required".into()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let up = Server::start(&flags);
    let port = up.addr.port();
    let toml = format!(
        "[[upstream]]\nurl = \"jsonrpc+https://localhost:{port}/\"\nprefix = \"j\"\ntls_ca = \"{ca}\"\n\n\
         [[upstream]]\nurl = \"xmlrpc+https://127.0.0.1:{port}/RPC2\"\nprefix = \"x\"\ntls_ca = \"{ca}\"\n",
        ca = pki.path("ca.pem")
    );
    let srv = gateway_with_config(&toml);
    for proto in [ClientProto::Msgpack, ClientProto::Xmlrpc] {
        for m in ["j.echo", "x.echo"] {
            let r = call(proto, &srv, m, vec!["over TLS".into()]).await;
            assert_eq!(r, Ok(Value::from("over TLS")), "{proto} {m}");
        }
    }
    // Trusting some other certificate instead of the CA: no connection, so no verbs.
    let toml = format!(
        "[[upstream]]\nurl = \"jsonrpc+https://127.0.0.1:{port}/\"\ntls_ca = \"{}\"\n",
        pki.path("rogue.pem")
    );
    let path = config_file(&toml);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("TLS handshake"), "{err}");
}

/// An upstream is input like any client's: one listing 10,000 verbs (two with control
/// characters in their names), with 1 MiB help texts and 100,000-type signatures,
/// leaves rpcmux starting, serving at most 1,024 of its verbs, their help cut to 4 KiB,
/// `rpc.discover` within bounds and memory bounded (under the hostile address-space
/// limit). Before: 1.6 GiB held, minutes to start, 194,893 metric series, or no start
/// at all for the control character.
#[test]
fn a_hostile_upstream_leaves_rpcmux_starting_and_bounded() {
    let up = PyUpstream::script(
        "RPCMUX_PY_CLIENTS",
        "clients",
        "hostile_upstream.py",
        &["0"],
    );
    let started = Instant::now();
    let srv = Server::start_limited(&["--no-demo", "--upstream", &up.url()]);
    let took = started.elapsed();
    eprintln!("started in {took:?}");
    assert!(took < Duration::from_secs(60), "took {took:?} to start");
    let log = srv.log();
    assert!(log.contains("upstream verb skipped"), "{log}");
    assert!(log.contains("more verbs than are served"), "{log}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let list = rt
        .block_on(call(
            ClientProto::Jsonrpc,
            &srv,
            "system.listMethods",
            vec![],
        ))
        .unwrap();
    let names = names(&list);
    let upstream: Vec<_> = names.iter().filter(|n| n.starts_with('v')).collect();
    assert_eq!(
        upstream.len(),
        1024,
        "served from the upstream: {}",
        upstream.len()
    );
    assert!(
        names.iter().all(|n| !n.chars().any(char::is_control)),
        "a name with a control character was served"
    );
    let help = rt
        .block_on(call(
            ClientProto::Jsonrpc,
            &srv,
            "system.methodHelp",
            vec!["v0".into()],
        ))
        .unwrap();
    let help = help.as_str().unwrap();
    assert!(help.len() <= 4 * 1024 + 3, "help of {} bytes", help.len());
    assert!(
        !help.contains('\u{1b}'),
        "an escape sequence reached the help"
    );
    let sig = rt
        .block_on(call(
            ClientProto::Jsonrpc,
            &srv,
            "system.methodSignature",
            vec!["v0".into()],
        ))
        .unwrap();
    assert!(
        !matches!(&sig, Value::Array(a) if a.len() > 16),
        "an oversized signature was kept: {sig:?}"
    );
    let doc = rt
        .block_on(call(ClientProto::Jsonrpc, &srv, "rpc.discover", vec![]))
        .unwrap();
    let methods = doc.get("methods").and_then(Value::as_array).unwrap();
    assert!(methods.len() <= 1024 + 16, "{} methods", methods.len());
    let answered = rt
        .block_on(call(ClientProto::Xmlrpc, &srv, "v0", vec![]))
        .unwrap();
    assert_eq!(answered, Value::from("v0 answered"));
    let peak = srv.peak_rss_mib();
    eprintln!("peak RSS {peak} MiB");
    assert!(peak < 400, "peak RSS {peak} MiB");
    up.kill();
}
