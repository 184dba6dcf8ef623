//! The delivery model (docs/events.md, "The delivery model"; `src/events/mod.rs`) as a
//! check over recorded histories. Pure: no sockets, so the checker itself is tested on
//! histories that break each rule (see the tests at the end: a checker that cannot fail
//! proves nothing).
//!
//! The truth is the instance's own order of events (its retained window, read at the end
//! of a schedule with `since "0"` on a fresh connection), itself checked against what the
//! publishers were told: every acknowledged publish in it exactly once, each publisher's
//! events in the order it published them, ids unique and increasing per origin (I1, I6).
//! Then each client's history is checked against the truth, connection by connection
//! (I2 order, I3 reply first, I4 no silent gap and a true `first_lost`, I5 resume, I7
//! unsubscribe) and across its connections (every event exactly once after dedupe, from
//! its first to the end, unless a gap was reported to it).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// An event id: (origin, seq).
pub type Id = (u64, u64);

/// Parse `ORIGIN-SEQ`.
pub fn parse_id(s: &str) -> Option<Id> {
    let (o, q) = s.split_once('-')?;
    Some((u64::from_str_radix(o, 16).ok()?, q.parse().ok()?))
}

/// Format an id as the server writes it.
pub fn show(id: Id) -> String {
    format!("{:016x}-{}", id.0, id.1)
}

/// One event of the truth.
#[derive(Debug, Clone)]
pub struct Ev {
    pub id: Id,
    pub name: String,
    /// The publisher's tag, `P-N` (publisher P's Nth publish).
    pub tag: String,
}

/// A publish as its publisher saw it.
#[derive(Debug, Clone)]
pub struct Publish {
    pub tag: String,
    pub sent: Instant,
    /// The reply came (the publish is acknowledged).
    pub acked: bool,
}

/// What one connection of a client observed, in the order it read it.
#[derive(Debug, Clone)]
pub enum Obs {
    /// The reply to `subscribe` (STOMP: the RECEIPT): the subscription id, or the error
    /// code it was refused with.
    Subscribed(Result<u64, i64>),
    /// An event, with the subscription id it came under when the shape says.
    Event {
        id: Id,
        name: String,
        sub: Option<u64>,
    },
    /// `events.lost` (STOMP: an ERROR with `first-lost`).
    Lost { first_lost: Id },
    /// The reply to `unsubscribe`, and when it was read.
    Unsubscribed { ok: bool, at: Instant },
}

/// One connection of a client.
#[derive(Debug, Clone)]
pub struct Conn {
    pub proto: &'static str,
    /// The subscription's `since`: `None` live, `Some(None)` "0", `Some(Some(id))` after id.
    pub since: Option<Option<Id>>,
    pub obs: Vec<Obs>,
    /// The client read until it had every event of the truth (the last connection of a
    /// client the schedule lets finish): liveness is checked on it.
    pub to_the_end: bool,
}

/// One logical client: a pattern, and the connections it made one after another.
#[derive(Debug, Clone)]
pub struct Client {
    pub name: String,
    pub pattern: String,
    pub conns: Vec<Conn>,
}

/// Does `name` match subscription `pattern` (the server's rule, `events::hub::matches`)?
pub fn matches(pattern: &str, name: &str) -> bool {
    if pattern.is_empty() || pattern == "*" || pattern == name {
        return true;
    }
    match name.strip_prefix(pattern) {
        Some(rest) => pattern.ends_with(['|', '.']) || rest.starts_with(['|', '.']),
        None => false,
    }
}

/// Check the truth against the publishers (I1, I6). `publishers`: each one's publishes
/// in the order made.
pub fn check_truth(truth: &[Ev], publishers: &[Vec<Publish>]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut last_seq: HashMap<u64, u64> = HashMap::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, e) in truth.iter().enumerate() {
        if let Some(prev) = last_seq.insert(e.id.0, e.id.1) {
            if e.id.1 <= prev {
                bad.push(format!("I1: {} after seq {prev} of its origin", show(e.id)));
            }
        }
        if seen.insert(&e.tag, i).is_some() {
            bad.push(format!("I1: tag {} twice in the window", e.tag));
        }
    }
    for (p, pubs) in publishers.iter().enumerate() {
        let mut last = None;
        for publish in pubs {
            match seen.get(publish.tag.as_str()) {
                None if publish.acked => bad.push(format!(
                    "I6: publisher {p}'s acknowledged {} is not in the window",
                    publish.tag
                )),
                None => {}
                Some(&at) => {
                    if last.is_some_and(|l| at < l) {
                        bad.push(format!("I1: publisher {p}'s {} out of order", publish.tag));
                    }
                    last = Some(at);
                }
            }
        }
    }
    bad
}

/// Check every client's history against the truth (see the module doc).
/// `sent`: when each tag's publish was sent (for I7).
pub fn check_clients(
    truth: &[Ev],
    clients: &[Client],
    sent: &HashMap<String, Instant>,
) -> Vec<String> {
    let mut bad = Vec::new();
    for c in clients {
        let found = check_client(truth, c, sent);
        // A broken rule often breaks it for every event after: the first few say it.
        for v in found.iter().take(5) {
            bad.push(format!("{}: {v}", c.name));
        }
        if found.len() > 5 {
            bad.push(format!("{}: ... and {} more", c.name, found.len() - 5));
        }
    }
    bad
}

fn check_client(truth: &[Ev], c: &Client, sent: &HashMap<String, Instant>) -> Vec<String> {
    let mut bad = Vec::new();
    // The events this client may get, in the instance's order.
    let f: Vec<&Ev> = truth
        .iter()
        .filter(|e| matches(&c.pattern, &e.name))
        .collect();
    let at: HashMap<Id, usize> = f.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
    let in_truth: HashSet<Id> = truth.iter().map(|e| e.id).collect();
    // Across connections: what the client has handled, by index in `f`.
    let mut handled: Vec<bool> = vec![false; f.len()];
    let mut first_handled: Option<usize> = None;
    let mut gaps_reported = 0usize;
    for (k, conn) in c.conns.iter().enumerate() {
        let label = format!("conn {k} ({})", conn.proto);
        let mut reply: Option<Result<u64, i64>> = None;
        let mut unsub_at: Option<Instant> = None;
        let mut last_seq: HashMap<u64, u64> = HashMap::new();
        let mut prev: Option<usize> = None;
        let mut first: Option<usize> = None;
        let mut lost = false;
        for o in &conn.obs {
            match o {
                Obs::Subscribed(r) => reply = Some(*r),
                Obs::Unsubscribed { ok, at } => {
                    if !ok {
                        bad.push(format!("{label}: I7: unsubscribe answered false"));
                    }
                    unsub_at = Some(*at);
                }
                Obs::Lost { first_lost } => {
                    lost = true;
                    gaps_reported += 1;
                    // I4: the true first loss: the event after the last one taken.
                    let want = match prev {
                        Some(p) => f.get(p + 1).map(|e| e.id),
                        None => None,
                    };
                    match (want, at.get(first_lost)) {
                        (_, None) => bad.push(format!(
                            "{label}: I4: first_lost {} is no event this subscription matches",
                            show(*first_lost)
                        )),
                        (Some(w), Some(_)) if w != *first_lost => bad.push(format!(
                            "{label}: I4: first_lost {} but the first event not delivered is {}",
                            show(*first_lost),
                            show(w)
                        )),
                        _ => {}
                    }
                }
                Obs::Event { id, name, sub } => {
                    if lost {
                        bad.push(format!("{label}: an event after events.lost"));
                    }
                    match reply {
                        Some(Ok(s)) => {
                            if sub.is_some_and(|got| got != s) {
                                bad.push(format!(
                                    "{label}: event under subscription {sub:?}, made {s}"
                                ));
                            }
                        }
                        Some(Err(code)) => {
                            bad.push(format!(
                                "{label}: an event after subscribe was refused ({code})"
                            ));
                        }
                        None => bad.push(format!(
                            "{label}: I3: event {} before the subscribe reply",
                            show(*id)
                        )),
                    }
                    if !in_truth.contains(id) {
                        bad.push(format!("{label}: event {} is not in the window", show(*id)));
                        continue;
                    }
                    if !matches(&c.pattern, name) {
                        bad.push(format!("{label}: {name} does not match {}", c.pattern));
                        continue;
                    }
                    if let Some(p) = last_seq.insert(id.0, id.1) {
                        if id.1 <= p {
                            bad.push(format!("{label}: I2: {} after seq {p}", show(*id)));
                        }
                    }
                    let i = at[id];
                    if let (Some(u), Some(t)) = (unsub_at, sent.get(&f[i].tag)) {
                        if *t > u {
                            bad.push(format!(
                                "{label}: I7: {} published after the unsubscribe reply",
                                show(*id)
                            ));
                        }
                    }
                    match prev {
                        None => first = Some(i),
                        Some(p) if i != p + 1 => bad.push(format!(
                            "{label}: I4: {} after {}: {} event(s) between them silently missing",
                            show(*id),
                            show(f[p].id),
                            i.saturating_sub(p + 1)
                        )),
                        _ => {}
                    }
                    prev = Some(i);
                    if handled[i] {
                        bad.push(format!("{label}: I5: {} again after the resume", show(*id)));
                    }
                    handled[i] = true;
                    first_handled.get_or_insert(i);
                }
            }
        }
        // I5: a resume starts right after its `since`.
        let resume_at = match conn.since {
            Some(since) => match start_after(truth, &f, since) {
                Some(i) => Some(i),
                None => {
                    bad.push(format!(
                        "{label}: since {:?} is not in the window",
                        since.map(show)
                    ));
                    None
                }
            },
            None => None,
        };
        if let (Some(since), Some(first), Some(want)) = (conn.since, first, resume_at) {
            if first != want {
                bad.push(format!(
                    "{label}: I5: resumed after {} but the first event was {} (expected {})",
                    since.map_or_else(|| "0".into(), show),
                    show(f[first].id),
                    f.get(want).map_or("none".into(), |e| show(e.id))
                ));
            }
        }
        if let (Some(Some(_)), Some(Err(code))) = (conn.since, reply) {
            bad.push(format!(
                "{label}: I5: resume refused ({code}) though the window holds it"
            ));
        }
        if conn.to_the_end && !lost && reply.is_some_and(|r| r.is_ok()) {
            let next = prev.map(|p| p + 1).or(resume_at);
            if let Some(last) = next.filter(|&n| n < f.len()) {
                bad.push(format!(
                    "{label}: I4: ended at {} of {} events: {} never came",
                    last,
                    f.len(),
                    show(f[last].id)
                ));
            }
        }
    }
    // Across connections: from the first event handled to the end, every one exactly
    // once (duplicates were counted above), when the client resumed each time.
    if let (Some(start), true) = (first_handled, c.conns.last().is_some_and(|l| l.to_the_end)) {
        let missing: Vec<usize> = (start..f.len()).filter(|&i| !handled[i]).collect();
        if !missing.is_empty() {
            bad.push(format!(
                "I5: {} event(s) never handled across {} connection(s) ({} gap notice(s)); first {}",
                missing.len(),
                c.conns.len(),
                gaps_reported,
                show(f[missing[0]].id)
            ));
        }
    }
    bad
}

/// Where a resume after `since` starts in `f` (`None` in `since`: "0", the start).
fn start_after(truth: &[Ev], f: &[&Ev], since: Option<Id>) -> Option<usize> {
    let Some(id) = since else {
        return Some(0);
    };
    let p = truth.iter().position(|e| e.id == id)?;
    let later: HashSet<Id> = truth[p + 1..].iter().map(|e| e.id).collect();
    Some(
        f.iter()
            .position(|e| later.contains(&e.id))
            .unwrap_or(f.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truth(n: u64) -> Vec<Ev> {
        (1..=n)
            .map(|q| Ev {
                id: (7, q),
                name: format!("|m|{}", if q.is_multiple_of(2) { "a" } else { "b" }),
                tag: format!("0-{q}"),
            })
            .collect()
    }

    fn ev(q: u64) -> Obs {
        let name = format!("|m|{}", if q.is_multiple_of(2) { "a" } else { "b" });
        Obs::Event {
            id: (7, q),
            name,
            sub: Some(1),
        }
    }

    fn client(conns: Vec<Conn>) -> Client {
        Client {
            name: "c".into(),
            pattern: "|m".into(),
            conns,
        }
    }

    fn conn(since: Option<Option<Id>>, obs: Vec<Obs>, to_the_end: bool) -> Conn {
        Conn {
            proto: "t",
            since,
            obs,
            to_the_end,
        }
    }

    fn check(t: &[Ev], c: Client) -> Vec<String> {
        check_clients(t, &[c], &HashMap::new())
    }

    #[test]
    fn a_good_history_passes() {
        let t = truth(6);
        let mut a = vec![Obs::Subscribed(Ok(1))];
        a.extend((1..=3).map(ev));
        let mut b = vec![Obs::Subscribed(Ok(1))];
        b.extend((4..=6).map(ev));
        let c = client(vec![
            conn(None, a, false),
            conn(Some(Some((7, 3))), b, true),
        ]);
        assert_eq!(check(&t, c), Vec::<String>::new());
    }

    #[test]
    fn each_rule_broken_is_found() {
        let t = truth(6);
        let cases: Vec<(&str, Client)> = vec![
            (
                "I3",
                client(vec![conn(None, vec![ev(1), Obs::Subscribed(Ok(1))], false)]),
            ),
            (
                "I4: (7,3) skipped",
                client(vec![conn(
                    None,
                    vec![Obs::Subscribed(Ok(1)), ev(1), ev(2), ev(4)],
                    false,
                )]),
            ),
            (
                "I2",
                client(vec![conn(
                    None,
                    vec![Obs::Subscribed(Ok(1)), ev(2), ev(1)],
                    false,
                )]),
            ),
            (
                "first_lost",
                client(vec![conn(
                    None,
                    vec![
                        Obs::Subscribed(Ok(1)),
                        ev(1),
                        Obs::Lost { first_lost: (7, 3) },
                    ],
                    false,
                )]),
            ),
            (
                "I5 resume start",
                client(vec![
                    conn(None, vec![Obs::Subscribed(Ok(1)), ev(1)], false),
                    conn(
                        Some(Some((7, 1))),
                        vec![Obs::Subscribed(Ok(1)), ev(3)],
                        false,
                    ),
                ]),
            ),
            (
                "I5 duplicate",
                client(vec![
                    conn(None, vec![Obs::Subscribed(Ok(1)), ev(1), ev(2)], false),
                    conn(
                        Some(Some((7, 1))),
                        vec![Obs::Subscribed(Ok(1)), ev(2)],
                        false,
                    ),
                ]),
            ),
            (
                "liveness",
                client(vec![conn(
                    None,
                    vec![Obs::Subscribed(Ok(1)), ev(1), ev(2)],
                    true,
                )]),
            ),
            (
                "across",
                client(vec![
                    conn(None, vec![Obs::Subscribed(Ok(1)), ev(1), ev(2)], false),
                    conn(
                        None,
                        vec![Obs::Subscribed(Ok(1)), ev(4), ev(5), ev(6)],
                        true,
                    ),
                ]),
            ),
        ];
        for (what, c) in cases {
            assert!(
                !check(&t, c.clone()).is_empty(),
                "{what} not found in {c:?}"
            );
        }
    }

    #[test]
    fn a_true_first_lost_passes_and_the_truth_is_checked() {
        let t = truth(4);
        let c = client(vec![conn(
            None,
            vec![
                Obs::Subscribed(Ok(1)),
                ev(1),
                ev(2),
                Obs::Lost { first_lost: (7, 3) },
            ],
            false,
        )]);
        assert_eq!(check(&t, c), Vec::<String>::new());
        let now = Instant::now();
        let publish = |tag: &str, acked| Publish {
            tag: tag.into(),
            sent: now,
            acked,
        };
        assert!(check_truth(&t, &[vec![publish("0-1", true), publish("0-2", true)]]).is_empty());
        assert!(
            !check_truth(&t, &[vec![publish("0-9", true)]]).is_empty(),
            "lost ack"
        );
        assert!(!check_truth(&t, &[vec![publish("0-2", true), publish("0-1", true)]]).is_empty());
        let mut dup = t.clone();
        dup.push(t[0].clone());
        assert!(!check_truth(&dup, &[]).is_empty(), "an id twice");
    }
}
