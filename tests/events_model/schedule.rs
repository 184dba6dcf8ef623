//! Fault schedules: generated from a seed, run against a real server, recorded as
//! histories for [`crate::model`].
//!
//! A schedule is a few publishers (raw-TCP JSON-RPC, each publishing its events one after
//! another, some padded so that a paused reader overflows quickly) and a few clients,
//! each on a protocol and shape drawn from every one that carries events, with a pattern
//! and a plan: connections one after another, each ended by a fault (a cut, a pause long
//! enough to overflow its outbox, an `unsubscribe`, a slow reader), the next resuming
//! with `since` the last id it handled, as `rpcmux watch` does; a first `subscribe` may
//! come pipelined with a matching publish of its own (I3). When the publishers are done,
//! the truth is read (`since "0"`), and each client's last connection reads until it has
//! every event it may get.
//!
//! Same seed, same schedule: the plan is drawn up front; only the interleaving the
//! machine produces differs between runs, which is what the checker is for.

use crate::model::{self, show, Client, Conn, Ev, Id, Obs, Publish};
use crate::wire::{Msg, Proto, Wire};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How a connection of a client ends (before its last one).
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Close the socket after reading this many events.
    Cut(usize),
    /// After this many events, stop reading until the publishers are done (the outbox
    /// overflows when what they publish meanwhile passes what the kernel, the
    /// connection's output and the outbox hold: then `events.lost` and a resume).
    Pause(usize),
    /// After this many events, read slowly (a few ms per event) until the next fault.
    Slow(usize),
    /// After this many events, `unsubscribe`, read on for a while, then close.
    Unsubscribe(usize),
}

/// One client's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub proto: Proto,
    pub pattern: String,
    /// The first subscription resumes from "0" instead of starting live.
    pub from_zero: bool,
    /// The first `subscribe` comes in one write with a publish of a matching event.
    pub pipelined_publish: bool,
    /// The faults ending each connection but the last, in order.
    pub faults: Vec<Fault>,
}

/// A whole schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Each publisher's events: (name, pad bytes).
    pub publishers: Vec<Vec<(String, usize)>>,
    pub clients: Vec<Plan>,
    /// `--events-outbox`.
    pub outbox: usize,
    /// How long each publisher waits between its publishes: the events of a schedule
    /// come over a second or two, so that pauses and cuts fall among them.
    pub pace: Duration,
    /// Restart the server (with its events in `--events-dir`) once this many publishes
    /// are acknowledged: `true` by SIGKILL, `false` by SIGTERM. In a fleet: SIGKILL
    /// Redis and start it again, `true` with its stream kept (an append-only file),
    /// `false` empty.
    pub restart: Option<(usize, bool)>,
    /// Two instances sharing a Redis stream instead of one: publishers and clients are
    /// dealt between them, and each instance's window is the truth of its clients.
    pub fleet: bool,
}

/// Stops and starts the server a schedule runs against, on one address.
pub trait Restarter: Sync {
    /// Stop it (SIGKILL when `kill`, else SIGTERM and wait), then start it again.
    fn restart(&self, kill: bool);
}

const PATTERNS: [&str; 5] = ["*", "|m", "|m|a", "|m|b", "|m|a|0"];

impl Schedule {
    /// The schedule of `seed`, sized by `events` (about how many events in all).
    pub fn generate(seed: u64, events: usize) -> Schedule {
        let mut rng = fastrand::Rng::with_seed(seed);
        let n_pub = rng.usize(1..=3);
        let big = rng.u8(0..3) > 0;
        let publishers = (0..n_pub)
            .map(|p| {
                (0..events / n_pub)
                    .map(|_| {
                        let topic = if rng.bool() { "a" } else { "b" };
                        // Big events make a paused reader overflow within a schedule: the
                        // kernel buffers up to 4 MiB for a socket whose peer reads nothing.
                        let pad = match (big, rng.u8(0..10)) {
                            (true, 0..=5) => rng.usize(32 * 1024..96 * 1024),
                            _ => rng.usize(0..2048),
                        };
                        (format!("|m|{topic}|{p}"), pad)
                    })
                    .collect()
            })
            .collect();
        let clients = (0..rng.usize(2..=5))
            .map(|_| {
                let proto = Proto::ALL[rng.usize(..Proto::ALL.len())];
                let pattern = match proto {
                    Proto::Stomp => "*",
                    _ => PATTERNS[rng.usize(..PATTERNS.len())],
                };
                let faults = (0..rng.usize(0..=3))
                    .map(|_| {
                        let after = rng.usize(0..events / 3 + 1);
                        match rng.u8(0..5) {
                            0 => Fault::Cut(after),
                            1 | 2 => Fault::Pause(after / 4),
                            3 => Fault::Slow(after),
                            _ => Fault::Unsubscribe(after),
                        }
                    })
                    .collect();
                Plan {
                    proto,
                    pattern: pattern.to_owned(),
                    from_zero: rng.u8(0..4) == 0,
                    pipelined_publish: proto != Proto::Stomp && rng.bool(),
                    faults,
                }
            })
            .collect();
        let pace = Duration::from_micros(rng.u64(0..6000) * n_pub as u64);
        let restart =
            (rng.u8(0..3) == 0).then(|| (rng.usize(events / 4..events * 3 / 4), rng.bool()));
        let fleet = rng.u8(0..4) == 0;
        Schedule {
            publishers,
            clients,
            outbox: [16, 64, 4096][rng.usize(0..3)],
            pace,
            restart,
            fleet,
        }
    }

    /// The server's flags for this schedule.
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--events-outbox".into(),
            self.outbox.to_string(),
            // Nothing leaves the window while a schedule runs: the truth is all of it.
            "--events-retain-bytes".into(),
            (1u64 << 30).to_string(),
            // A reader that stops backs up into its outbox after 64 KiB, not 4 MiB.
            "--max-conn-output".into(),
            "65536".into(),
            // A SIGTERM waits this long at most for connections to drain (a paused
            // reader holds its output): clients and publishers wait longer to come back.
            "--shutdown-timeout".into(),
            "3".into(),
        ]
    }
}

/// What a run recorded.
pub struct Recorded {
    /// Each instance's window, in its order.
    pub truths: Vec<Vec<Ev>>,
    /// The instance each client was on.
    pub client_on: Vec<usize>,
    pub publishers: Vec<Vec<Publish>>,
    pub clients: Vec<Client>,
    /// Faults that happened (for the campaign's figures): overflows, cuts, resumes.
    pub lost_notices: usize,
    pub connections: usize,
    /// The server's restart, said (or "no restart").
    pub restart: String,
}

/// What every client's last connection waits for: the truth, once read.
type Shared = Arc<OnceLock<Vec<Ev>>>;

/// Run `s` against the servers at `addrs` (one, or a fleet's two; restarted by `server`
/// when the schedule says).
pub fn run(s: &Schedule, addrs: &[SocketAddr], server: &dyn Restarter) -> Recorded {
    std::thread::scope(|scope| {
        let acked = Arc::new(AtomicUsize::new(0));
        if let Some((after, kill)) = s.restart {
            let acked = acked.clone();
            scope.spawn(move || {
                let until = Instant::now() + Duration::from_secs(60);
                while acked.load(Ordering::Relaxed) < after && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
                server.restart(kill);
            });
        }
        let mut r = run_among(s, addrs, &acked);
        r.restart = match (s.restart, s.fleet) {
            (None, false) => "no restart".into(),
            (None, true) => "a fleet of 2, no restart".into(),
            (Some((after, true)), false) => format!("SIGKILL after {after} publishes"),
            (Some((after, false)), false) => format!("SIGTERM after {after} publishes"),
            (Some((after, aof)), true) => format!(
                "a fleet of 2, Redis SIGKILLed after {after} publishes and started {}",
                if aof { "with its stream" } else { "empty" }
            ),
        };
        r
    })
}

fn run_among(s: &Schedule, addrs: &[SocketAddr], acked: &Arc<AtomicUsize>) -> Recorded {
    let truths: Vec<Shared> = addrs.iter().map(|_| Shared::default()).collect();
    let published = Arc::new(Mutex::new(Vec::<Vec<Publish>>::new()));
    let client_on: Vec<usize> = (0..s.clients.len()).map(|k| k % addrs.len()).collect();
    let clients: Vec<_> = s
        .clients
        .iter()
        .enumerate()
        .map(|(k, plan)| {
            let on = client_on[k];
            let (plan, truth, published) = (plan.clone(), truths[on].clone(), published.clone());
            let addr = addrs[on];
            std::thread::spawn(move || client(k, &plan, addr, &truth, &published))
        })
        .collect();
    // Publishers start once the clients had a moment to subscribe (not required: a
    // live subscription may start anywhere; this only makes schedules interesting).
    std::thread::sleep(Duration::from_millis(50));
    let pubs: Vec<_> = s
        .publishers
        .iter()
        .enumerate()
        .map(|(p, events)| {
            let (events, pace, acked) = (events.clone(), s.pace, acked.clone());
            let addr = addrs[p % addrs.len()];
            std::thread::spawn(move || publisher(p, &events, pace, addr, &acked))
        })
        .collect();
    let mut all: Vec<Vec<Publish>> = pubs
        .into_iter()
        .map(|h| h.join().expect("publisher"))
        .collect();
    // Give the clients' own pipelined publishes a moment to be acknowledged too.
    std::thread::sleep(Duration::from_millis(100));
    all.extend(published.lock().unwrap().drain(..));
    let finals: Vec<String> = all
        .iter()
        .filter_map(|p| p.iter().rev().find(|x| x.acked))
        .map(|p| p.tag.clone())
        .collect();
    // Each instance's window holds every acknowledged publish, its own and (through the
    // stream) the others' (I6).
    let t: Vec<Vec<Ev>> = addrs.iter().map(|a| read_truth(*a, &finals)).collect();
    for (shared, t) in truths.iter().zip(&t) {
        shared.set(t.clone()).expect("set once");
    }
    let clients: Vec<Client> = clients
        .into_iter()
        .map(|h| h.join().expect("client"))
        .collect();
    let lost_notices = clients
        .iter()
        .flat_map(|c| &c.conns)
        .flat_map(|c| &c.obs)
        .filter(|o| matches!(o, Obs::Lost { .. }))
        .count();
    let connections = clients.iter().map(|c| c.conns.len()).sum();
    all.extend(published.lock().unwrap().drain(..));
    Recorded {
        truths: t,
        client_on,
        restart: String::new(),
        publishers: all,
        clients,
        lost_notices,
        connections,
    }
}

/// Publish `events` one after another, each once its previous one is acknowledged.
fn publisher(
    p: usize,
    events: &[(String, usize)],
    pace: Duration,
    addr: SocketAddr,
    count: &AtomicUsize,
) -> Vec<Publish> {
    let json = Proto::JsonTcp { notify: false };
    let mut w = connect_again(json, addr, None).expect("publisher connects");
    let mut done = Vec::new();
    for (n, (name, pad)) in events.iter().enumerate() {
        let tag = format!("{p}-{n}");
        let sent = Instant::now();
        // A publish on a connection the server dropped (a restart) is not acknowledged;
        // the next one goes on a new connection.
        let acked = match w.publish(name, &tag, *pad) {
            Err(_) => false,
            Ok(id) => loop {
                match w.next(Duration::from_secs(20)) {
                    Ok(Some(Msg::Reply { id: got, result })) if got == id => break result.is_ok(),
                    Ok(Some(_)) => {}
                    Ok(None) | Err(()) => break false,
                }
            },
        };
        if acked {
            count.fetch_add(1, Ordering::Relaxed);
        } else {
            w = connect_again(json, addr, None).expect("publisher connects again");
        }
        done.push(Publish { tag, sent, acked });
        std::thread::sleep(pace);
    }
    done
}

/// Connect, trying again for a while (the server may be restarting: a SIGTERM drains for
/// up to `--shutdown-timeout`, 3 s, and a debug build starts in well under a second).
fn connect_again(proto: Proto, addr: SocketAddr, rcvbuf: Option<usize>) -> Option<Wire> {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        match Wire::connect_with(proto, addr, rcvbuf) {
            Ok(w) => return Some(w),
            Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return None,
        }
    }
}

/// The window, in the instance's order, read with `since "0"` until every publisher's
/// last acknowledged event has come.
fn read_truth(addr: SocketAddr, finals: &[String]) -> Vec<Ev> {
    let mut w = Wire::connect(Proto::JsonTcp { notify: false }, addr).expect("truth connects");
    w.subscribe("*", Some("0")).expect("subscribe");
    let mut truth = Vec::new();
    let mut left: Vec<&String> = finals.iter().collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !left.is_empty() && Instant::now() < deadline {
        match w.next(Duration::from_secs(1)) {
            Ok(Some(Msg::Event { id, name, tag, .. })) => {
                left.retain(|t| **t != tag);
                truth.push(Ev { id, name, tag });
            }
            Ok(Some(Msg::Reply {
                result: Err(code), ..
            })) => panic!("truth refused: {code}"),
            Ok(_) => {}
            Err(()) => panic!("truth connection closed"),
        }
    }
    assert!(
        left.is_empty(),
        "the window lacks the last events of {left:?}"
    );
    truth
}

/// One client: its connections one after another, per its plan.
fn client(
    k: usize,
    plan: &Plan,
    addr: SocketAddr,
    truth: &Shared,
    published: &Mutex<Vec<Vec<Publish>>>,
) -> Client {
    let mut conns = Vec::new();
    let mut last: Option<Id> = None;
    let mut own = Vec::new();
    let mut faults = plan.faults.iter();
    let mut first = true;
    loop {
        let fault = faults.next().copied();
        let since = match (first, last) {
            (true, _) if plan.from_zero => Some(None),
            (true, _) => None,
            (false, Some(id)) => Some(Some(id)),
            (false, None) => Some(None),
        };
        let pipelined = first && plan.pipelined_publish;
        first = false;
        let to_the_end = fault.is_none();
        let mut conn = Conn {
            proto: plan.proto.name(),
            since,
            obs: Vec::new(),
            to_the_end,
        };
        let ended_by = connection(
            plan,
            addr,
            fault,
            &mut conn,
            &mut last,
            truth,
            pipelined.then_some((k, &mut own)),
        );
        // The model holds a last connection to having every event unless the server
        // ended it (a restart, an overflow): then the next one resumes.
        conn.to_the_end = to_the_end && !matches!(ended_by, End::Again);
        conns.push(conn);
        // A connection that lost events (overflow), or one whose last read the truth
        // was not over, goes round again (resuming); the plan's faults come first.
        match (&ended_by, fault) {
            (End::Done, None) => break,
            (End::Gave, _) => break,
            _ if conns.len() > plan.faults.len() + 8 => break,
            _ => {}
        }
    }
    published.lock().unwrap().push(own);
    Client {
        name: format!("client {k} ({} {})", plan.proto.name(), plan.pattern),
        pattern: plan.pattern.clone(),
        conns,
    }
}

/// How a connection ended.
enum End {
    /// Its fault ended it, or the server closed it: the client resumes.
    Again,
    /// It read every event (the last connection).
    Done,
    /// It could not connect, or waited too long: the client stops (a liveness failure
    /// shows in the check).
    Gave,
}

/// One connection of a client, recorded into `conn`.
#[allow(clippy::too_many_arguments)]
fn connection(
    plan: &Plan,
    addr: SocketAddr,
    fault: Option<Fault>,
    conn: &mut Conn,
    last: &mut Option<Id>,
    truth: &Shared,
    pipelined: Option<(usize, &mut Vec<Publish>)>,
) -> End {
    let Some(mut w) = connect_again(plan.proto, addr, Some(8 * 1024)) else {
        return End::Gave;
    };
    let since = conn.since.map(|s| s.map_or("0".to_owned(), show));
    let Ok(sub_req) = w.subscribe(&plan.pattern, since.as_deref()) else {
        return End::Again;
    };
    let mut publish_req = None;
    let mut own = None;
    if let Some((k, mine)) = pipelined {
        // The first name the pattern matches, published in the same breath.
        let name = ["|m|a|0", "|m|b|0"]
            .into_iter()
            .find(|n| model::matches(&plan.pattern, n))
            .unwrap_or("|m|a|0");
        let tag = format!("c{k}-0");
        mine.push(Publish {
            tag: tag.clone(),
            sent: Instant::now(),
            acked: false,
        });
        publish_req = w.publish(name, &tag, 0).ok();
        own = Some(mine);
    }
    let mut sub_id = None;
    let mut events = 0usize;
    let mut slow = false;
    let mut unsub_req = None;
    let mut fault = fault;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() > deadline {
            w.cut();
            return End::Gave;
        }
        // The last connection is done once it has every event it may get.
        if conn.to_the_end {
            if let Some(t) = truth.get() {
                let want = t
                    .iter()
                    .rev()
                    .find(|e| model::matches(&plan.pattern, &e.name))
                    .map(|e| e.id);
                if want.is_none() || want == *last {
                    w.cut();
                    return End::Done;
                }
            }
        } else if truth.get().is_some() && unsub_req.is_none() && fault.is_some() && !slow {
            // The publishers are done before this fault came: on to the last connection.
            w.cut();
            return End::Again;
        }
        match fault {
            Some(Fault::Cut(n)) if events >= n => {
                w.cut();
                return End::Again;
            }
            Some(Fault::Pause(n)) if events >= n => {
                let until = Instant::now() + Duration::from_secs(30);
                while truth.get().is_none() && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                }
                fault = None;
            }
            Some(Fault::Slow(n)) if events >= n => slow = true,
            Some(Fault::Unsubscribe(n)) if events >= n && unsub_req.is_none() => {
                if let Some(s) = sub_id {
                    unsub_req = w.unsubscribe(s).ok();
                }
            }
            _ => {}
        }
        let msg = match w.next(Duration::from_millis(100)) {
            Ok(Some(m)) => m,
            Ok(None) => {
                if !conn.to_the_end && unsub_req.is_none() && truth.get().is_some() {
                    // Its fault has passed (a pause, a slow read) and what it had to
                    // read has come: on to the last connection.
                    w.cut();
                    return End::Again;
                }
                if unsub_req.is_some()
                    && conn
                        .obs
                        .iter()
                        .any(|o| matches!(o, Obs::Unsubscribed { .. }))
                {
                    // Read on a while after the unsubscribe reply (I7), then close.
                    if unsub_linger_done(conn) {
                        w.cut();
                        return End::Again;
                    }
                }
                continue;
            }
            Err(()) => return End::Again,
        };
        match msg {
            Msg::Reply { id, result } if id == sub_req => {
                let r = match (plan.proto, result) {
                    (Proto::Stomp, Ok(_)) => Ok(sub_req),
                    (_, Ok(v)) => Ok(v.as_u64().unwrap_or(0)),
                    (_, Err(code)) => Err(code),
                };
                sub_id = r.ok();
                conn.obs.push(Obs::Subscribed(r));
                if r.is_err() {
                    return End::Again;
                }
            }
            Msg::StompError {
                receipt: Some(id),
                code,
            } if id == sub_req => {
                conn.obs.push(Obs::Subscribed(Err(code)));
                return End::Again;
            }
            Msg::Reply { id, result } if Some(id) == unsub_req => {
                let ok = match plan.proto {
                    Proto::Stomp => result.is_ok(),
                    _ => result.is_ok_and(|v| v == serde_json::Value::Bool(true)),
                };
                conn.obs.push(Obs::Unsubscribed {
                    ok,
                    at: Instant::now(),
                });
            }
            Msg::Reply { id, result } if Some(id) == publish_req => {
                if let Some(p) = own.as_mut().and_then(|o| o.last_mut()) {
                    p.acked = result.is_ok();
                }
            }
            Msg::Reply { .. } | Msg::StompError { .. } => {}
            Msg::Event { id, name, sub, .. } => {
                conn.obs.push(Obs::Event { id, name, sub });
                if last.is_none_or(|l| id.1 > l.1 || id.0 != l.0) {
                    *last = Some(id);
                }
                events += 1;
                if slow {
                    std::thread::sleep(Duration::from_millis(3));
                }
            }
            Msg::Lost { first_lost } => {
                conn.obs.push(Obs::Lost { first_lost });
            }
        }
    }
}

/// Has the connection read on long enough after its unsubscribe reply?
fn unsub_linger_done(conn: &Conn) -> bool {
    conn.obs.iter().rev().find_map(|o| match o {
        Obs::Unsubscribed { at, .. } => Some(at.elapsed() > Duration::from_millis(200)),
        _ => None,
    }) == Some(true)
}

/// Check a run: each instance's truth against the publishers, every client against its
/// instance's truth.
pub fn check(r: &Recorded) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, t) in r.truths.iter().enumerate() {
        let label = if r.truths.len() > 1 {
            format!("instance {i}: ")
        } else {
            String::new()
        };
        bad.extend(
            model::check_truth(t, &r.publishers)
                .into_iter()
                .map(|v| format!("{label}{v}")),
        );
    }
    let sent: HashMap<String, Instant> = r
        .publishers
        .iter()
        .flatten()
        .map(|p| (p.tag.clone(), p.sent))
        .collect();
    for (i, t) in r.truths.iter().enumerate() {
        let on: Vec<Client> = r
            .clients
            .iter()
            .zip(&r.client_on)
            .filter(|(_, &o)| o == i)
            .map(|(c, _)| c.clone())
            .collect();
        bad.extend(model::check_clients(t, &on, &sent));
    }
    bad
}
