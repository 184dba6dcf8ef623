//! The event path checked against its delivery model (docs/events.md, "The delivery
//! model"), under generated fault schedules, with real servers.
//!
//! - `model.rs`: the model as a check over recorded histories (and the checker's own
//!   tests: each rule broken on purpose is found).
//! - `wire.rs`: hand-written clients of every protocol that carries events, so the
//!   checker sees exactly what was written and in which order.
//! - `schedule.rs`: schedules generated from a seed (publishers; clients on every
//!   protocol and shape, cut, paused into overflow, slowed, unsubscribing, resuming),
//!   run and recorded.
//!
//! CI runs a fixed set of seeds of every kind (`ci_seeds_*`, about 15 s each). The
//! campaign runs on demand:
//!
//! ```sh
//! RPCMUX_MODEL_SCHEDULES=1000 RPCMUX_MODEL_SEED=1 \
//!   cargo nextest run --release --test events_model campaign --run-ignored only --no-capture
//! ```
//!
//! It prints each failing seed with its violations (rerun one with
//! `RPCMUX_MODEL_SCHEDULES=1 RPCMUX_MODEL_SEED=<seed>`), and the figures for
//! docs/events.md.

#[path = "../common/mod.rs"]
mod common;

mod fleet;
mod model;
mod schedule;
mod wire;

use schedule::Schedule;

/// Events per CI schedule (the campaign's default too).
const EVENTS: usize = 240;

/// Run the schedule of `seed` on a fresh server; its violations (a schedule that could
/// not run to its end, its server gone or a client stuck, is one).
fn run_seed(seed: u64, events: usize) -> (Vec<String>, Option<schedule::Recorded>) {
    match std::panic::catch_unwind(|| run_seed_inner(seed, events)) {
        Ok((bad, r)) => (bad, Some(r)),
        Err(e) => {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            (
                vec![format!("the schedule did not run to its end: {why}")],
                None,
            )
        }
    }
}

fn run_seed_inner(seed: u64, events: usize) -> (Vec<String>, schedule::Recorded) {
    let s = Schedule::generate(seed, events);
    if s.fleet {
        return run_fleet(seed, &s);
    }
    let mut args = s.server_args();
    // A schedule that restarts its server keeps its events in a log that outlives it.
    let dir = s
        .restart
        .map(|_| common::temp_dir(&format!("events-model-{seed}")));
    if let Some(d) = &dir {
        args.extend(["--events-dir".to_owned(), d.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::new(&args);
    let recorded = schedule::run(&s, &[server.addr], &server);
    let bad = schedule::check(&recorded);
    drop(server);
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
    (bad, recorded)
}

/// A fleet schedule: two instances on one Redis stream (its own channel), Redis
/// SIGKILLed and started again (with its stream, or empty) when the schedule says.
fn run_fleet(seed: u64, s: &Schedule) -> (Vec<String>, schedule::Recorded) {
    let aof = s.restart.is_some_and(|(_, keep)| keep);
    let redis = fleet::Redis::start(aof.then(|| common::temp_dir(&format!("model-redis-{seed}"))));
    let mut args = s.server_args();
    args.extend([
        "--events".to_owned(),
        redis.url(),
        "--events-channel".to_owned(),
        format!("model-{seed}"),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let a = common::Server::start(&args);
    let b = common::Server::start(&args);
    // An instance reads the stream from when it joins: both join before anything is
    // published (an event published before another instance joined is its history).
    fleet::wait_joined(&a);
    fleet::wait_joined(&b);
    let recorded = schedule::run(s, &[a.addr, b.addr], &redis);
    let bad = schedule::check(&recorded);
    drop((a, b));
    (bad, recorded)
}
/// The server a schedule runs against, restarted on its address when the schedule says.
struct Server {
    addr: std::net::SocketAddr,
    args: Vec<String>,
    running: std::sync::Mutex<Option<common::Server>>,
}

impl Server {
    fn new(args: &[&str]) -> Server {
        let s = common::Server::start(args);
        Server {
            addr: s.addr,
            args: args.iter().map(|a| a.to_string()).collect(),
            running: std::sync::Mutex::new(Some(s)),
        }
    }
}

impl schedule::Restarter for Server {
    fn restart(&self, kill: bool) {
        let mut running = self.running.lock().unwrap();
        if let Some(mut s) = running.take() {
            if kill {
                drop(s); // SIGKILL, and waited for
            } else {
                s.sigterm();
                s.wait_exit(std::time::Duration::from_secs(30));
            }
        }
        let listen = self.addr.to_string();
        let mut args = vec!["--listen", listen.as_str()];
        args.extend(self.args.iter().map(String::as_str));
        *running = Some(common::Server::start(&args));
    }
}

fn assert_seeds(seeds: &[u64]) {
    let mut failed = Vec::new();
    for &seed in seeds {
        let (bad, r) = run_seed(seed, EVENTS);
        let Some(r) = r else {
            failed.push(format!("seed {seed}:\n  {}", bad.join("\n  ")));
            continue;
        };
        eprintln!(
            "seed {seed}: {} events, {} connections, {} events.lost, {}, {} violation(s)",
            r.truths[0].len(),
            r.connections,
            r.lost_notices,
            r.restart,
            bad.len()
        );
        if !bad.is_empty() {
            failed.push(format!("seed {seed}:\n  {}", bad.join("\n  ")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// CI's seeds: schedules of every kind (one instance without a restart: 1-4, 6-8; a
/// SIGKILL and a SIGTERM of the server with `--events-dir`: 15, 17; a fleet of two
/// without a Redis fault: 5; Redis SIGKILLed and started empty: 32, with its stream:
/// 1014), split in two tests that run side by side.
#[test]
fn ci_seeds_one_instance_and_restarts() {
    assert_seeds(&[1, 2, 3, 4, 15, 17]);
}

#[test]
fn ci_seeds_fleets_and_redis_restarts() {
    assert_seeds(&[5, 6, 7, 8, 32, 1014]);
}

/// The on-demand campaign (see the module doc): `RPCMUX_MODEL_SCHEDULES` schedules from
/// seed `RPCMUX_MODEL_SEED`, `RPCMUX_MODEL_EVENTS` events each.
#[test]
#[ignore = "a campaign: run on demand (see the module doc)"]
fn campaign() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let n = env("RPCMUX_MODEL_SCHEDULES", 100);
    let first = env("RPCMUX_MODEL_SEED", 1);
    let events = env("RPCMUX_MODEL_EVENTS", EVENTS as u64) as usize;
    let start = std::time::Instant::now();
    let (mut failed, mut total_events, mut conns, mut lost, mut restarts) =
        (Vec::new(), 0, 0, 0, 0);
    for seed in first..first + n {
        let (bad, r) = run_seed(seed, events);
        if let Some(r) = &r {
            eprintln!("seed {seed}: {}, {} violation(s)", r.restart, bad.len());
            total_events += r.truths[0].len();
            conns += r.connections;
            lost += r.lost_notices;
            // A server's or Redis's SIGKILL or SIGTERM (a fleet without a fault is none).
            restarts += usize::from(r.restart.contains("SIG"));
        }
        if !bad.is_empty() {
            eprintln!(
                "seed {seed}: {} violation(s)\n  {}",
                bad.len(),
                bad.join("\n  ")
            );
            failed.push(seed);
        }
    }
    eprintln!(
        "campaign: {n} schedules from seed {first} in {:.0} s: {total_events} events, {conns} connections, {lost} events.lost notices, {restarts} restarts of a server or Redis; {} failing seed(s) {failed:?}",
        start.elapsed().as_secs_f64(),
        failed.len()
    );
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
}
