//! The bypass matrix's HTTP/2 cells (issue 39): cleartext h2 (prior knowledge) and h2
//! negotiated by ALPN under TLS, driven by Node's own `http2` client
//! (tests/node/h2_streams.mjs): POST streams, WebSocket sessions on extended CONNECT
//! streams (RFC 8441) with `rpc.login`, STOMP over those, and streams with different
//! credentials on one connection. Every stream of a connection is its own caller and its
//! own event session: what one proves, or subscribes to, no other stream has.
//!
//! Judged by side effects (the fixture's counters of `vault.touch` and `vault.open`) as
//! well as by the answers, each cell with controls on the same connection that must run.

use super::fixture::{Fixture, PASSWORD};
use super::{FORBIDDEN, NOT_AUTHENTICATED};
use crate::common::pki::{Pki, CLIENT_CN};
use base64::Engine;
use serde_json::{json, Value as J};

/// How a cell reaches the server: its URL and the TLS files the client presents.
struct Link<'a> {
    fx: &'a Fixture,
    name: &'static str,
    url: String,
    /// CA, then the client certificate and key when one is presented.
    files: Vec<String>,
}

impl<'a> Link<'a> {
    fn h2c(fx: &'a Fixture) -> Link<'a> {
        Link {
            fx,
            name: "h2c",
            url: format!("http://{}", fx.addr),
            files: Vec::new(),
        }
    }

    /// TLS, ALPN h2; with `cert`, the client certificate (CN [`CLIENT_CN`], a staff user).
    fn tls(fx: &'a Fixture, pki: &Pki, cert: bool) -> Link<'a> {
        let mut files = vec![pki.path("ca.pem")];
        if cert {
            files.extend([pki.path("client.pem"), pki.path("client.key")]);
        }
        Link {
            fx,
            name: if cert { "h2-tls-cert" } else { "h2-tls" },
            url: format!("https://{}", fx.addr),
            files,
        }
    }

    /// Run `plan` on one connection; the outcomes of its keyed steps.
    fn run(&self, plan: &[J]) -> Result<J, String> {
        let plan = J::from(plan.to_vec()).to_string();
        let mut args = vec![self.url.as_str(), plan.as_str()];
        args.extend(self.files.iter().map(String::as_str));
        let node = std::env::var("RPCMUX_NODE").unwrap_or_else(|_| "node".into());
        let dir = crate::common::repo().join("tests/node");
        let run = std::process::Command::new(node)
            .arg(dir.join("h2_streams.mjs"))
            .args(&args)
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("run node: {e}"))?;
        let (out, err) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        let out: J = serde_json::from_str(out.trim())
            .map_err(|e| format!("h2_streams.mjs ({}): {e}: {out}{err}", run.status))?;
        if self.url.starts_with("https:") && out["alpn"] != "h2" {
            return Err(format!("ALPN did not choose h2: {out}"));
        }
        Ok(out["results"].clone())
    }
}

fn basic(user: &str, password: &str) -> String {
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// A WebSocket session `name` (`stomp`: STOMP 1.2 in its messages) on a stream of its own,
/// with `auth` as the CONNECT's `Authorization`.
fn ws(name: &str, stomp: bool, auth: Option<String>) -> J {
    let sub = if stomp { "v12.stomp" } else { "jsonrpc" };
    json!({"op": "ws", "as": name, "sub": sub, "auth": auth, "key": format!("{name}-ws")})
}

fn call(key: &str, on: &str, method: &str, params: J) -> J {
    json!({"op": "call", "on": on, "method": method, "params": params, "key": key})
}

fn login(on: &str, user: &str) -> J {
    let key = format!("{on}-login-{user}");
    call(
        &key,
        on,
        "rpc.login",
        json!({"user": user, "password": PASSWORD}),
    )
}

fn stomp_connect(on: &str, user: Option<&str>) -> J {
    match user {
        Some(u) => json!({"op": "stomp_connect", "on": on, "login": u, "passcode": PASSWORD,
                          "key": format!("{on}-connect")}),
        None => json!({"op": "stomp_connect", "on": on, "key": format!("{on}-connect")}),
    }
}

/// A POST stream on the connection, with `auth` as its `Authorization`.
fn post(key: &str, method: &str, params: J, auth: Option<String>) -> J {
    json!({"op": "post", "method": method, "params": params, "auth": auth, "key": key})
}

/// The outcome of the step keyed `key`.
fn at<'r>(r: &'r J, key: &str) -> Result<&'r J, String> {
    r.get(key)
        .filter(|v| !v.is_null())
        .ok_or_else(|| format!("{key}: no outcome in {r}"))
}

fn refused(r: &J, key: &str, code: i64) -> Result<(), String> {
    let v = at(r, key)?;
    if v["error"]["code"] == code {
        Ok(())
    } else {
        Err(format!("{key}: wanted error {code}, got {v}"))
    }
}

fn ran(r: &J, key: &str) -> Result<J, String> {
    let v = at(r, key)?;
    match v.get("result") {
        Some(x) if v.get("error").is_none() => Ok(x.clone()),
        _ => Err(format!("{key}: did not run: {v}")),
    }
}

/// Every WebSocket handshake was answered 200, every login and STOMP CONNECT held: a cell
/// cannot pass because its path did not work.
fn controls(r: &J) -> Result<(), String> {
    for (k, v) in r.as_object().into_iter().flatten() {
        let ok = if k.ends_with("-ws") {
            v["status"] == 200
        } else if k.contains("-login-") {
            v.get("result").is_some()
        } else if k.ends_with("-connect") {
            v["connected"] == true
        } else {
            continue;
        };
        if !ok {
            return Err(format!("control: {k} failed: {v}"));
        }
    }
    Ok(())
}

/// The counters moved by exactly this much while `f` ran.
fn moved(
    fx: &Fixture,
    touched: u64,
    opened: u64,
    f: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let (t0, o0) = (fx.touched(), fx.opened());
    f()?;
    let (t, o) = (fx.touched() - t0, fx.opened() - o0);
    if (t, o) == (touched, opened) {
        Ok(())
    } else {
        Err(format!(
            "vault.touch ran {t} times (wanted {touched}), vault.open {o} (wanted {opened})"
        ))
    }
}

/// POST streams: each is its own request, with its own `Authorization` or none.
fn post_streams(l: &Link) -> Result<(), String> {
    moved(l.fx, 1, 0, || {
        let alice = Some(basic("alice", PASSWORD));
        let r = l.run(&[
            post("anon-touch", "vault.touch", json!([]), None),
            post("alice-touch", "vault.touch", json!([]), alice.clone()),
            post("alice-open", "vault.open", json!([]), alice),
            post(
                "wrong-touch",
                "vault.touch",
                json!([]),
                Some(basic("bob6", "wrong horse")),
            ),
        ])?;
        refused(&r, "anon-touch", NOT_AUTHENTICATED)?;
        ran(&r, "alice-touch")?;
        refused(&r, "alice-open", FORBIDDEN)?;
        match at(&r, "wrong-touch")?["status"].as_u64() {
            Some(401) => Ok(()),
            _ => Err(format!("a wrong password: {}", r["wrong-touch"])),
        }
    })
}

/// A WebSocket stream that logs in with `rpc.login`, and one whose CONNECT carries
/// `Authorization`.
fn websocket_login(l: &Link) -> Result<(), String> {
    moved(l.fx, 2, 0, || {
        let r = l.run(&[
            ws("a", false, None),
            call("a-anon-touch", "a", "vault.touch", json!([])),
            login("a", "alice"),
            call("a-touch", "a", "vault.touch", json!([])),
            call("a-open", "a", "vault.open", json!([])),
            ws("b", false, Some(basic("alice", PASSWORD))),
            call("b-touch", "b", "vault.touch", json!([])),
            call("b-open", "b", "vault.open", json!([])),
        ])?;
        controls(&r)?;
        refused(&r, "a-anon-touch", NOT_AUTHENTICATED)?;
        ran(&r, "a-touch")?;
        refused(&r, "a-open", FORBIDDEN)?;
        ran(&r, "b-touch")?;
        refused(&r, "b-open", FORBIDDEN)
    })
}

/// STOMP over WebSocket over HTTP/2: CONNECT without and with `login`/`passcode`.
fn stomp_websocket(l: &Link) -> Result<(), String> {
    moved(l.fx, 1, 0, || {
        let r = l.run(&[
            ws("s", true, None),
            stomp_connect("s", None),
            call("s-touch", "s", "vault.touch", json!([])),
            ws("t", true, None),
            stomp_connect("t", Some("alice")),
            call("t-touch", "t", "vault.touch", json!([])),
            call("t-open", "t", "vault.open", json!([])),
        ])?;
        controls(&r)?;
        refused(&r, "s-touch", NOT_AUTHENTICATED)?;
        ran(&r, "t-touch")?;
        refused(&r, "t-open", FORBIDDEN)
    })
}

/// One connection, streams with different credentials: `a` logs in as root by
/// `rpc.login`, `s` by STOMP CONNECT; a POST without `Authorization` stays anonymous,
/// so do WebSocket streams opened before and after, and `c`, logged in as alice before
/// root came, stays alice. Controls: root's streams open the vault, alice's POST
/// touches it.
fn mixed_credentials(l: &Link) -> Result<(), String> {
    moved(l.fx, 1, 2, || {
        let r = l.run(&[
            ws("c", false, None),
            login("c", "alice"),
            ws("b", false, None),
            ws("a", false, None),
            login("a", "root"),
            ws("s", true, None),
            stomp_connect("s", Some("root")),
            post("post-touch", "vault.touch", json!([]), None),
            post("post-open", "vault.open", json!([]), None),
            call("b-touch", "b", "vault.touch", json!([])),
            ws("d", false, None),
            call("d-open", "d", "vault.open", json!([])),
            call("c-open", "c", "vault.open", json!([])),
            call("c-who", "c", "whoami", json!([])),
            call("a-open", "a", "vault.open", json!([])),
            call("s-open", "s", "vault.open", json!([])),
            post(
                "post-alice",
                "vault.touch",
                json!([]),
                Some(basic("alice", PASSWORD)),
            ),
        ])?;
        all(vec![
            controls(&r),
            refused(&r, "post-touch", NOT_AUTHENTICATED),
            refused(&r, "post-open", NOT_AUTHENTICATED),
            refused(&r, "b-touch", NOT_AUTHENTICATED),
            refused(&r, "d-open", NOT_AUTHENTICATED),
            refused(&r, "c-open", FORBIDDEN),
            ran(&r, "c-who").and_then(|who| {
                check(who["principal"] == "alice", || {
                    format!("the stream logged in as alice is now {who}")
                })
            }),
            ran(&r, "a-open").map(drop),
            ran(&r, "s-open").map(drop),
            ran(&r, "post-alice").map(drop),
        ])
    })
}

/// `Ok` if `ok`, else why not.
fn check(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// Every check's failure, or `Ok` when none failed.
fn all(checks: Vec<Result<(), String>>) -> Result<(), String> {
    let failed: Vec<String> = checks.into_iter().filter_map(Result::err).collect();
    check(failed.is_empty(), || failed.join("; "))
}

/// With a client certificate (a staff user): every stream starts as it, whatever
/// another stream logs in as; a stream's `rpc.login` as root is that stream's alone.
fn certificate(l: &Link) -> Result<(), String> {
    moved(l.fx, 1, 1, || {
        let r = l.run(&[
            ws("a", false, None),
            login("a", "root"),
            post("post-who", "whoami", json!([]), None),
            post("post-open", "vault.open", json!([]), None),
            ws("b", false, None),
            call("b-who", "b", "whoami", json!([])),
            call("b-open", "b", "vault.open", json!([])),
            call("b-touch", "b", "vault.touch", json!([])),
            call("a-open", "a", "vault.open", json!([])),
        ])?;
        controls(&r)?;
        for key in ["post-who", "b-who"] {
            let who = ran(&r, key)?;
            if who["principal"] != CLIENT_CN {
                return Err(format!(
                    "{key}: wanted the certificate's {CLIENT_CN}: {who}"
                ));
            }
        }
        refused(&r, "post-open", FORBIDDEN)?;
        refused(&r, "b-open", FORBIDDEN)?;
        ran(&r, "b-touch")?;
        ran(&r, "a-open").map(drop)
    })
}

/// Two WebSocket sessions on one connection, both alice: `b` cannot unsubscribe `a`'s
/// subscription; an event for `b`'s subscription reaches `b` and not `a`; one event
/// both subscribed to reaches two receivers; `a`'s reset leaves `b` subscribed.
fn event_sessions(l: &Link) -> Result<(), String> {
    let root = Some(basic("root", PASSWORD));
    let publish =
        |key: &str, name: String| post(key, "Host.publishEvent", json!([name]), root.clone());
    let ev = |what: &str| format!("|virt|{}-{what}|1", l.name);
    let prefix = |what: &str| format!("|virt|{}-{what}|", l.name);
    let until = |key: &str, on: &str, name: String| json!({"op": "events_until", "on": on, "name": name, "key": key});
    let r = l.run(&[
        ws("a", false, None),
        login("a", "alice"),
        call("a-sub", "a", "subscribe", json!([prefix("a")])),
        ws("b", false, None),
        login("b", "alice"),
        call("b-unsub-a", "b", "unsubscribe", json!([1])),
        publish("pub-a", ev("a")),
        until("a-got-a", "a", ev("a")),
        call("b-sub", "b", "subscribe", json!([prefix("b")])),
        publish("pub-b", ev("b")),
        until("b-got-b", "b", ev("b")),
        call("a-both", "a", "subscribe", json!([prefix("both")])),
        call("b-both", "b", "subscribe", json!([prefix("both")])),
        publish("pub-both", ev("both")),
        until("a-got-both", "a", ev("both")),
        until("b-got-both", "b", ev("both")),
        // Anything for `a` arrived before the answer to its ping and the pause after.
        call("a-ping", "a", "ping", json!([])),
        json!({"op": "sleep", "ms": 200}),
        json!({"op": "events", "on": "a", "key": "a-stray"}),
        json!({"op": "reset", "on": "a"}),
        // Time for the server to end `a`'s session (it would drop `b`'s with it).
        json!({"op": "sleep", "ms": 500}),
        publish("pub-after", format!("|virt|{}-b|2", l.name)),
        until("b-after", "b", format!("|virt|{}-b|2", l.name)),
    ])?;
    let arrived = |key: &str| {
        at(&r, key).and_then(|v| match v.get("timeout") {
            None => Ok(()),
            Some(_) => Err(format!("{key}: the event did not arrive: {v}")),
        })
    };
    let a_seen = [&r["a-got-a"], &r["a-got-both"], &r["a-stray"]]
        .iter()
        .flat_map(|v| v["events"].as_array().cloned().unwrap_or_default())
        .collect::<Vec<_>>();
    all(vec![
        controls(&r),
        ran(&r, "a-sub").and_then(|id| {
            check(id == json!(1), || {
                format!("a's first subscription is not id 1: {id}")
            })
        }),
        ran(&r, "b-unsub-a").and_then(|v| {
            check(v == json!(false), || {
                format!("b unsubscribed a's subscription 1: {v}")
            })
        }),
        arrived("a-got-a"),
        arrived("b-got-b"),
        arrived("a-got-both"),
        arrived("b-got-both"),
        arrived("b-after").map_err(|e| format!("after a's reset: {e}")),
        match a_seen.iter().find(|e| **e == ev("b")) {
            Some(leak) => Err(format!("b's event {leak} arrived on a: {a_seen:?}")),
            None => Ok(()),
        },
        ran(&r, "pub-both").and_then(|n| {
            check(n == json!(2), || {
                format!("an event both sessions subscribed to reached {n} receivers, not 2")
            })
        }),
    ])
}

type CellFn = fn(&Link) -> Result<(), String>;

/// Run each cell over each link; the failures, each naming its cell.
fn cells(links: &[Link], cells: &[(&str, CellFn)]) -> Vec<String> {
    let mut failed = Vec::new();
    for l in links {
        for (name, cell) in cells {
            let verdict = cell(l);
            eprintln!("{} x {name}: {verdict:?}", l.name);
            if let Err(e) = verdict {
                failed.push(format!("{} x {name}: {e}", l.name));
            }
        }
    }
    failed
}

fn none_failed(failed: Vec<String>) {
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

const CALLER_CELLS: [(&str, CellFn); 4] = [
    ("post-streams", post_streams),
    ("websocket-login", websocket_login),
    ("stomp-websocket", stomp_websocket),
    ("mixed-credentials", mixed_credentials),
];

#[test]
fn h2c_streams_keep_their_own_callers() {
    let fx = Fixture::start("h2c-callers");
    none_failed(cells(&[Link::h2c(&fx)], &CALLER_CELLS));
}

#[test]
fn h2_tls_streams_keep_their_own_callers() {
    let pki = Pki::new();
    let fx = Fixture::start_tls("h2-tls-callers", &pki, false);
    let mut failed = cells(&[Link::tls(&fx, &pki, false)], &CALLER_CELLS);
    drop(fx);
    let fx = Fixture::start_tls("h2-tls-cert", &pki, true);
    failed.extend(cells(
        &[Link::tls(&fx, &pki, true)],
        &[("certificate", certificate)],
    ));
    none_failed(failed);
}

#[test]
fn h2_websockets_keep_their_own_event_sessions() {
    let pki = Pki::new();
    let fx = Fixture::start_tls("h2-events", &pki, false);
    none_failed(cells(
        &[Link::h2c(&fx), Link::tls(&fx, &pki, false)],
        &[("event-sessions", event_sessions)],
    ));
}

/// Issue 39 (second review): a client that drops its HTTP/2 connection with WebSocket
/// sessions open (the process exits: no close, no GOAWAY) left their subscriptions in
/// the hub for good: the connection's end aborted the session tasks before they told
/// the hub, and every later publish visited them. Now they go with their sessions.
#[test]
fn h2_websocket_subscriptions_go_when_the_connection_drops() {
    let fx = Fixture::start("h2-drop");
    let l = Link::h2c(&fx);
    let r = l
        .run(&[
            ws("a", false, None),
            login("a", "alice"),
            call("a-sub", "a", "subscribe", json!(["|virt|drop-a|"])),
            ws("b", false, None),
            login("b", "alice"),
            call("b-sub", "b", "subscribe", json!(["|virt|drop-b|"])),
            call("b-sub2", "b", "subscribe", json!(["|virt|drop-c|"])),
        ])
        .unwrap();
    for key in ["a-sub", "b-sub", "b-sub2"] {
        ran(&r, key).unwrap();
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while fx.events.subscriber_count() > 0 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        fx.events.subscriber_count(),
        0,
        "subscriptions of sessions whose connection is gone"
    );
}
