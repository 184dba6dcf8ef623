//! `rpcmux watch` across a SIGKILL and restart of its server (issue 46, case 5): with
//! `--events-dir` the instance keeps its id and window, and the watcher resumes with no
//! gap (every event once, in order, by id); without it the watcher says the gap on
//! stderr (`server restarted; events between X and now are lost`) and goes on printing
//! what the new instance publishes; it never exits.

use crate::common::hostile::Lines;
use crate::common::Server;
use crate::watch::{publish, Watch};
use std::time::{Duration, Instant};

/// A port free now on 127.0.0.1, so both runs of a server listen on the same address
/// (one instance, restarted: the same node part of its id).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `rpcmux serve` on `listen` with `extra` (the server binds with SO_REUSEADDR, so the
/// address of a killed instance is free again at once).
fn serve(listen: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--listen", listen];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// Wait until `w`'s stderr contains `needle`.
fn wait_stderr(w: &Watch, needle: &str, within: Duration) {
    let end = Instant::now() + within;
    while !w.stderr().contains(needle) {
        assert!(Instant::now() < end, "no {needle:?} in:\n{}", w.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next event's `n`, and its id split into (origin, seq).
fn next(w: &Watch) -> (u64, String, u64) {
    let e = w
        .next(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("no event came\n{}", w.stderr()));
    let id = e["event_id"].as_str().expect("an event id").to_owned();
    let (origin, seq) = id.split_once('-').unwrap();
    (
        e["params"]["n"].as_u64().unwrap(),
        origin.to_owned(),
        seq.parse().unwrap(),
    )
}

#[test]
fn watch_resumes_across_a_sigkill_with_events_dir_and_misses_nothing() {
    let dir = crate::common::temp_dir("watch-restart-log");
    let dir = dir.to_str().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let srv = serve(&listen, &["--events-dir", dir]);
    let w = Watch::start(&["--timeout", "5", &listen, "|t"]);
    wait_stderr(&w, "subscribed", Duration::from_secs(20));
    let mut publisher = Lines::connect(srv.addr).unwrap();
    for n in 1..=50 {
        publish(&mut publisher, n);
    }
    // Read what came before the kill; the rest is acknowledged, so in the log.
    let mut got = Vec::new();
    for _ in 1..=20 {
        got.push(next(&w));
    }
    drop(publisher);
    drop(srv); // SIGKILL
    let srv = serve(&listen, &["--events-dir", dir]);
    let mut publisher = Lines::connect(srv.addr).unwrap();
    // Published while the watcher is (most likely) still away: replayed from the log.
    for n in 51..=100 {
        publish(&mut publisher, n);
    }
    while got.len() < 100 {
        got.push(next(&w));
    }
    let origin = &got[0].1;
    for (i, (n, o, seq)) in got.iter().enumerate() {
        let want = i as u64 + 1;
        assert_eq!(*n, want, "every event once, in order\n{}", w.stderr());
        assert_eq!(o, origin, "one instance id across the restart");
        assert_eq!(*seq, want, "its seq continued");
    }
    assert!(
        w.next(Duration::from_millis(300)).is_none(),
        "nothing more\n{}",
        w.stderr()
    );
    let log = w.stderr();
    assert!(log.contains("resuming after"), "{log}");
    assert!(!log.contains("lost"), "no gap: {log}");
}

#[test]
fn watch_reports_the_gap_of_a_restart_without_events_dir_and_goes_on() {
    let listen = format!("127.0.0.1:{}", free_port());
    let srv = serve(&listen, &[]);
    let mut w = Watch::start(&["--timeout", "5", &listen, "|t"]);
    wait_stderr(&w, "subscribed", Duration::from_secs(20));
    let mut publisher = Lines::connect(srv.addr).unwrap();
    for n in 1..=10 {
        publish(&mut publisher, n);
    }
    let mut last = None;
    for want in 1..=10 {
        let (n, origin, seq) = next(&w);
        assert_eq!(n, want);
        last = Some(format!("{origin}-{seq}"));
    }
    drop(publisher);
    drop(srv); // SIGKILL
    let srv = serve(&listen, &[]);
    let line = format!(
        "server restarted; events between {} and now are lost",
        last.unwrap()
    );
    wait_stderr(&w, &line, Duration::from_secs(30));
    assert!(w.running(), "watch goes on\n{}", w.stderr());
    // What the new instance publishes is printed, each once, in order.
    let mut publisher = Lines::connect(srv.addr).unwrap();
    for n in 11..=20 {
        publish(&mut publisher, n);
    }
    for want in 11..=20 {
        assert_eq!(next(&w).0, want, "{}", w.stderr());
    }
    assert!(w.running());
    let log = w.stderr();
    assert!(log.contains("from the oldest retained"), "{log}");
}
