//! `rpcmux watch` (issue 40) against a real server behind a TCP proxy that the test
//! cuts for 3 s while a publisher goes on publishing numbered events: on every protocol
//! that carries events, the watcher connects again by itself, resumes after the last
//! id it printed and prints every event once, in order.

use crate::common::hostile::{Lines, KIB};
use crate::common::proxy::Proxy;
use crate::common::Server;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `rpcmux watch`, its stdout lines on a channel; killed on drop.
pub(crate) struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Watch {
    pub(crate) fn start(args: &[&str]) -> Watch {
        let (watch, gate) = Watch::start_gated(args);
        gate.send(()).unwrap();
        watch
    }

    /// Started with its stdout not read until something is sent on the gate: it blocks
    /// writing there, and so stops reading its connection.
    fn start_gated(args: &[&str]) -> (Watch, mpsc::Sender<()>) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
            .arg("watch")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rpcmux watch");
        let (tx, lines) = mpsc::channel();
        let (gate, opened) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let _ = opened.recv();
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (err, keep) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                let mut k = keep.lock().unwrap();
                k.push_str(&l);
                k.push('\n');
            }
        });
        let watch = Watch {
            child,
            lines,
            stderr,
        };
        (watch, gate)
    }

    /// The next event line, parsed; `None` after `within`.
    pub(crate) fn next(&self, within: Duration) -> Option<serde_json::Value> {
        let l = self.lines.recv_timeout(within).ok()?;
        Some(serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}")))
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Is it still running?
    pub(crate) fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Publish `|t|N` with params `{"n": N}`.
pub(crate) fn publish(publisher: &mut Lines, n: u64) {
    publish_padded(publisher, n, "");
}

/// Publish `|t|N` with params `{"n": N, "pad": pad}`.
fn publish_padded(publisher: &mut Lines, n: u64, pad: &str) {
    let call = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"Host.publishEvent\",\"params\":{{\"name\":\"|t|{n}\",\"params\":{{\"n\":{n},\"pad\":\"{pad}\"}}}},\"id\":{n}}}\n"
    );
    publisher.send(call.as_bytes()).unwrap();
    let r = publisher.json(KIB).expect("publish answered");
    assert!(r["result"].is_i64(), "{r}");
}

#[test]
fn watch_resumes_after_a_cut_and_prints_every_event_once_in_order() {
    const PROTOS: [&str; 5] = ["jsonrpc-tcp", "msgpack", "stomp", "jsonrpc-ws", "stomp-ws"];
    const TOTAL: u64 = 400;
    let srv = Server::start(&[]);
    let proxy = Proxy::start(srv.addr);
    let at = proxy.addr.to_string();
    let watchers: Vec<Watch> = PROTOS
        .iter()
        .map(|p| Watch::start(&["--proto", p, "--timeout", "5", &at, "|t"]))
        .collect();
    // Each says so on stderr once subscribed.
    let mut publisher = Lines::connect(srv.addr).unwrap();
    let warmup = Instant::now();
    for w in &watchers {
        while !w.stderr().contains("subscribed") {
            assert!(warmup.elapsed() < Duration::from_secs(20), "{}", w.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // Publishing at a steady rate (about 4 s) from another connection, the proxy is cut
    // for 3 s after the first hundred.
    let publishing = std::thread::spawn(move || {
        for n in 1..=TOTAL {
            publish(&mut publisher, n);
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    for w in &watchers {
        for want in 1..=50 {
            let e = w
                .next(Duration::from_secs(20))
                .expect("an event before the cut");
            assert_eq!(e["params"]["n"], want, "{e}");
        }
    }
    proxy.cut(Duration::from_secs(3));
    publishing.join().unwrap();
    for (w, proto) in watchers.iter().zip(PROTOS) {
        let mut ids = std::collections::HashSet::new();
        for want in 51..=TOTAL {
            let e = w
                .next(Duration::from_secs(30))
                .unwrap_or_else(|| panic!("{proto}: event {want} never came\n{}", w.stderr()));
            assert_eq!(e["params"]["n"], want, "{proto}: each once, in order: {e}");
            assert_eq!(e["name"], format!("|t|{want}"));
            assert!(ids.insert(e["event_id"].as_str().unwrap().to_owned()));
        }
        assert!(
            w.next(Duration::from_millis(300)).is_none(),
            "{proto}: nothing more"
        );
        let log = w.stderr();
        assert!(log.contains("connecting again"), "{proto}: {log}");
        assert!(log.contains("resuming after"), "{proto}: {log}");
    }
}

#[test]
fn watch_refuses_a_since_too_old_or_garbage_with_exit_1() {
    let srv = Server::start(&["--events-retain", "2"]);
    let addr = srv.addr.to_string();
    let mut publisher = Lines::connect(srv.addr).unwrap();
    for n in 1..=4 {
        publish(&mut publisher, n);
    }
    // After the server's own first event, its window of two (3 and 4) misses 2: too
    // old, for good (an id of an instance it never heard of is a restart:
    // watch_restart.rs).
    let first = {
        let w = Watch::start(&["--since", "0", &addr, "|t"]);
        let e = w.next(Duration::from_secs(10)).expect("replayed");
        let id = e["event_id"].as_str().unwrap().to_owned();
        format!("{}-1", id.split_once('-').unwrap().0)
    };
    for proto in ["jsonrpc-tcp", "stomp"] {
        let out = crate::common::run_rpcmux(
            &["watch", "--proto", proto, "--since", &first, &addr, "|t"],
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{proto}: {err}");
        assert!(
            err.contains("-32007") && err.contains("too old") && err.contains("oldest retained"),
            "{proto}: {err}"
        );
        let out = crate::common::run_rpcmux(
            &["watch", "--proto", proto, "--since", "yesterday", &addr],
            None,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{proto}: {err}");
        assert!(err.contains("-32602"), "{proto}: {err}");
    }
    // "0": what is retained (the last two), then live.
    let w = Watch::start(&["--since", "0", &addr, "|t"]);
    let ns: Vec<_> = (0..2)
        .map(|_| w.next(Duration::from_secs(10)).expect("replayed")["params"]["n"].clone())
        .collect();
    assert_eq!(ns, [3, 4]);
}

/// A watcher that stops reading (its stdout is not read) falls behind: the server drops
/// it with `events.lost`; once its output is read again it connects again, resumes
/// after the last event it printed (the server still retains the rest) and prints every
/// event once, in order.
#[test]
fn watch_told_of_events_lost_resumes_and_misses_nothing() {
    // 2,500 events of 16 KiB (40 MiB, within the 64 MiB retained) overflow what the
    // sockets, the client's queue and the server's outbox (16 MiB) hold.
    const TOTAL: u64 = 2500;
    let srv = Server::start(&[]);
    let addr = srv.addr.to_string();
    let (w, gate) = Watch::start_gated(&["--timeout", "20", &addr, "|t"]);
    let mut publisher = Lines::connect(srv.addr).unwrap();
    let warmup = Instant::now();
    while !w.stderr().contains("subscribed") {
        assert!(warmup.elapsed() < Duration::from_secs(20), "{}", w.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pad = "x".repeat(16 * 1024);
    for n in 1..=TOTAL {
        publish_padded(&mut publisher, n, &pad);
    }
    gate.send(()).unwrap();
    for want in 1..=TOTAL {
        let e = w
            .next(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("event {want} never came\n{}", w.stderr()));
        assert_eq!(e["params"]["n"], want, "each once, in order");
    }
    let log = w.stderr();
    assert!(
        log.contains("fell behind") && log.contains("outbox overflow"),
        "{log}"
    );
    assert!(log.contains("resuming after"), "{log}");
}

/// `--user` and `--password-file` as `rpcmux call` takes them: the watcher logs in on
/// each protocol and follows; without credentials the subscription is refused (exit 1).
#[test]
fn watch_logs_in_with_the_flags_of_call() {
    let f = crate::cli_auth::files();
    // alice as `rpcmux call`'s tests have her, receiving every event.
    let creds = std::fs::read_to_string(&f.creds).unwrap().replacen(
        "allow = [\"*\"]\n",
        "allow = [\"*\"]\nevents = [\"*\"]\n",
        1,
    );
    let file = f.creds.with_file_name("creds-events.toml");
    std::fs::write(&file, creds).unwrap();
    let srv = Server::start(&["--auth", file.to_str().unwrap()]);
    let addr = srv.addr.to_string();
    let pw = f.password.to_str().unwrap();
    let login = ["--user", "alice", "--password-file", pw];
    let protos = ["jsonrpc-tcp", "msgpack", "stomp", "jsonrpc-ws"];
    let watchers: Vec<Watch> = protos
        .iter()
        .map(|p| Watch::start(&[&["--proto", p][..], &login, &[&addr, "|t"]].concat()))
        .collect();
    let warmup = Instant::now();
    for w in &watchers {
        while !w.stderr().contains("subscribed") {
            assert!(warmup.elapsed() < Duration::from_secs(20), "{}", w.stderr());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let published = crate::common::run_rpcmux(
        &[
            &["call"][..],
            &login,
            &[&addr, "Host.publishEvent", "name=|t|1", r#"params={"n":1}"#],
        ]
        .concat(),
        None,
    );
    assert!(published.status.success(), "{published:?}");
    for (w, proto) in watchers.iter().zip(protos) {
        let e = w
            .next(Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{proto}: {}", w.stderr()));
        assert_eq!(e["params"]["n"], 1, "{proto}: {e}");
    }
    let out = crate::common::run_rpcmux(&["watch", &addr, "|t"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refused"), "{err}");
}

/// `watch` offers only the protocols that carry events and refuses an HTTP URL, naming
/// the forms that work (it listed xmlrpc and jsonrpc, and took `http://` silently:
/// issue 49); its help's exit-status text has no runs of spaces.
#[test]
fn watch_refuses_what_carries_no_events_and_says_what_does() {
    let out = crate::common::run_rpcmux(&["watch", "--proto", "xmlrpc", "127.0.0.1:1"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("jsonrpc-tcp, msgpack, stomp, jsonrpc-ws, stomp-ws"),
        "{err}"
    );
    let out = crate::common::run_rpcmux(&["watch", "http://127.0.0.1:1/"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("HTTP carries no events") && err.contains("ws://HOST:PORT/PATH"),
        "{err}"
    );
    let help = crate::common::run_rpcmux(&["watch", "--help"], None);
    let help = String::from_utf8_lossy(&help.stdout);
    let possible = help
        .split("--proto")
        .nth(1)
        .and_then(|s| s.split("--since").next())
        .unwrap_or_default();
    assert!(!possible.contains("xmlrpc"), "{possible}");
    let exit = help
        .split("Exit status")
        .nth(1)
        .expect("the exit-status text");
    assert!(!exit.contains("  "), "a run of spaces: {exit}");
}
