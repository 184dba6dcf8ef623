//! Events that lose nothing across a reconnect (issue 40), with real clients: stompjs
//! (STOMP over WebSocket, a `since` header on each resubscription) and the console in
//! headless chromium. The server sits behind a TCP proxy the test cuts for 3 s when the
//! client's script says "cut"; the script publishes before, during and after the cut,
//! and every event arrives once, in order.

use crate::common::proxy::Proxy;
use crate::common::{repo, Server};
use crate::websocket::chromium;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Run `tests/node/<script>` with `args`, cutting `proxy` for 3 s when it prints "cut";
/// its last line of output, parsed.
fn run_cutting(proxy: &Proxy, script: &str, args: &[&str]) -> serde_json::Value {
    let node = std::env::var("RPCMUX_NODE").unwrap_or_else(|_| "node".into());
    let dir = repo().join("tests/node");
    let mut child = Command::new(node)
        .arg(dir.join(script))
        .args(args)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut last = String::new();
    let mut cuts = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line == "cut" {
            cuts += 1;
            proxy.cut(Duration::from_secs(3));
        } else {
            last = line;
        }
    }
    let status = child.wait().unwrap();
    let errors = errors.join().unwrap();
    assert!(status.success(), "{script}: {status}\n{last}\n{errors}");
    assert_eq!(cuts, 1, "{script} asked for one cut: {last}");
    serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {last}\n{errors}"))
}

#[test]
fn stompjs_resubscribing_with_since_after_a_cut_misses_nothing() {
    let srv = Server::start(&[]);
    let proxy = Proxy::start(srv.addr);
    let r = run_cutting(
        &proxy,
        "stomp_resume.mjs",
        &[
            &format!("http://{}", srv.addr),
            &format!("ws://{}/", proxy.addr),
        ],
    );
    let want: Vec<u64> = (1..=90).collect();
    assert_eq!(r["ns"], serde_json::json!(want), "each once, in order: {r}");
    assert_eq!(r["ids"], r["unique"], "{r}");
    assert!(r["connects"].as_u64().unwrap() >= 2, "it reconnected: {r}");
}

#[test]
fn console_in_chromium_resumes_after_its_socket_is_cut() {
    let srv = Server::start(&[]);
    let proxy = Proxy::start(srv.addr);
    let r = run_cutting(
        &proxy,
        "console_resume_browser.mjs",
        &[
            &format!("http://{}", proxy.addr),
            &format!("http://{}", srv.addr),
            &chromium(),
        ],
    );
    let want: Vec<String> = (1..=20).map(|n| format!("|t|{n}")).collect();
    assert_eq!(
        r["names"],
        serde_json::json!(want),
        "each once, in order: {r}"
    );
    let ids = r["ids"].as_array().unwrap();
    assert!(
        ids.iter().all(|id| id.is_string()),
        "every event shows its id: {r}"
    );
    assert_eq!(r["states"][0], "(disconnected; retrying)", "{r}");
    assert_eq!(r["states"][1], "(live)", "{r}");
}
