//! Failed logins, counted per source address and per user: a few free, then each
//! further attempt waits out a lockout that doubles with every failure (1 s up to
//! 60 s). Nothing is verified while locked out, so guessing costs the guesser time and
//! the server nothing. A success clears the count; so do 15 quiet minutes.
//!
//! Users of the file and invented names are counted in tables of their own (the caller
//! says which a name is), so invented names cannot push a real user's count out, and
//! both are locked out alike: a lockout does not tell whether a name exists. Every
//! table is bounded by evicting the stalest entry. IPv6 sources count per /64: one host
//! usually holds a whole /64.
//!
//! A source whose last attempt succeeded, lately, is in good standing: its password
//! verifications may use a slot the flood cannot fill (`pool.rs`).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures before the first lockout.
const FREE: u32 = 5;
/// The first lockout; each further failure doubles it...
const FIRST_LOCKOUT: Duration = Duration::from_secs(1);
/// ...up to this.
const MAX_LOCKOUT: Duration = Duration::from_secs(60);
/// A count with no failure for this long is forgotten.
const QUIET: Duration = Duration::from_secs(15 * 60);
/// At most this many addresses (and as many users) are counted at once.
const MAX_ENTRIES: usize = 65_536;
/// How long a success keeps its source in good standing (while it fails no more).
const GOOD_FOR: Duration = Duration::from_secs(60 * 60);

/// A user name presented with a password, and whether the file has that user.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Name<'a> {
    /// A user of the credentials file.
    Known(&'a str),
    /// Any other name (counted by a keyed hash: its table holds no attacker's text).
    Unknown(&'a str),
}

/// The failure counts, per address and per user.
pub(crate) struct Throttle {
    tables: Mutex<Tables>,
    /// Hashes invented names (random per process: collisions cannot be aimed).
    hasher: foldhash::quality::RandomState,
}

struct Tables {
    sources: Table<IpAddr>,
    users: Table<Box<str>>,
    strangers: Table<u64>,
    /// Sources whose last attempt was a success, and when it was.
    good: HashMap<IpAddr, Instant>,
    cap: usize,
}

impl Throttle {
    pub(crate) fn new() -> Self {
        Self::with_capacity(MAX_ENTRIES)
    }

    pub(crate) fn with_capacity(cap: usize) -> Self {
        Throttle {
            tables: Mutex::new(Tables {
                sources: Table::new(cap),
                users: Table::new(cap),
                strangers: Table::new(cap),
                good: HashMap::new(),
                cap: cap.max(1),
            }),
            hasher: Default::default(),
        }
    }

    /// `Err(retry_after)` while `source` or `user` (or `None`) is locked out.
    pub(crate) fn check(&self, source: IpAddr, user: Option<Name<'_>>) -> Result<(), Duration> {
        self.check_at(source, user, Instant::now())
    }

    /// Count a failed attempt.
    pub(crate) fn failed(&self, source: IpAddr, user: Option<Name<'_>>) {
        self.failed_at(source, user, Instant::now());
    }

    /// A success: forget both counts; the source is in good standing.
    pub(crate) fn succeeded(&self, source: IpAddr, user: Option<Name<'_>>) {
        self.succeeded_at(source, user, Instant::now());
    }

    /// Whether `source`'s last attempt succeeded, less than [`GOOD_FOR`] ago.
    pub(crate) fn in_good_standing(&self, source: IpAddr) -> bool {
        let now = Instant::now();
        let tables = self.lock();
        let since = tables.good.get(&source_key(source));
        since.is_some_and(|at| now.saturating_duration_since(*at) < GOOD_FOR)
    }

    pub(crate) fn succeeded_at(&self, source: IpAddr, user: Option<Name<'_>>, now: Instant) {
        let key = source_key(source);
        let mut tables = self.lock();
        tables.sources.entries.remove(&key);
        if let Some(Name::Known(user)) = user {
            tables.users.entries.remove(user);
        }
        if !tables.good.contains_key(&key) && tables.good.len() >= tables.cap {
            tables
                .good
                .retain(|_, at| now.saturating_duration_since(*at) < GOOD_FOR);
            if tables.good.len() >= tables.cap {
                let oldest = tables.good.iter().min_by_key(|(_, at)| **at);
                if let Some(k) = oldest.map(|(k, _)| *k) {
                    tables.good.remove(&k);
                }
            }
        }
        tables.good.insert(key, now);
    }

    pub(crate) fn check_at(
        &self,
        source: IpAddr,
        user: Option<Name<'_>>,
        now: Instant,
    ) -> Result<(), Duration> {
        let tables = self.lock();
        let a = tables.sources.locked(&source_key(source), now);
        let b = match user {
            Some(Name::Known(u)) => tables.users.locked(u, now),
            Some(Name::Unknown(u)) => tables.strangers.locked(&self.hasher.hash_one(u), now),
            None => None,
        };
        match a.max(b) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    pub(crate) fn failed_at(&self, source: IpAddr, user: Option<Name<'_>>, now: Instant) {
        let key = source_key(source);
        let mut tables = self.lock();
        tables.sources.fail(key, now);
        tables.good.remove(&key);
        match user {
            Some(Name::Known(user)) => match tables.users.entries.get_mut(user) {
                Some(entry) => entry.fail(now),
                None => tables.users.fail(user.into(), now),
            },
            Some(Name::Unknown(user)) => tables.strangers.fail(self.hasher.hash_one(user), now),
            None => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tables> {
        // A panic elsewhere while counting leaves counts, not broken invariants.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// IPv4 (also IPv4-mapped IPv6) as is; other IPv6 addresses by their /64.
pub(crate) fn source_key(source: IpAddr) -> IpAddr {
    match source {
        IpAddr::V4(_) => source,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// Counts for one kind of key, at most `cap` of them.
struct Table<K> {
    entries: HashMap<K, Entry>,
    cap: usize,
}

struct Entry {
    failures: u32,
    last: Instant,
    until: Instant,
}

impl<K: Hash + Eq + Clone> Table<K> {
    fn new(cap: usize) -> Self {
        Table {
            entries: HashMap::new(),
            cap: cap.max(1),
        }
    }

    fn locked<Q>(&self, key: &Q, now: Instant) -> Option<Duration>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entry = self.entries.get(key)?;
        (entry.until > now).then(|| entry.until - now)
    }

    fn fail(&mut self, key: K, now: Instant) {
        if !self.entries.contains_key(&key) && self.entries.len() >= self.cap {
            self.make_room(now);
        }
        self.entries
            .entry(key)
            .or_insert(Entry {
                failures: 0,
                last: now,
                until: now,
            })
            .fail(now);
    }

    /// Drop the forgotten entries; if none was, the stalest one.
    fn make_room(&mut self, now: Instant) {
        self.entries.retain(|_, e| !e.forgotten(now));
        if self.entries.len() >= self.cap {
            let stalest = self.entries.iter().min_by_key(|(_, e)| e.last);
            if let Some(key) = stalest.map(|(k, _)| k.clone()) {
                self.entries.remove(&key);
            }
        }
    }
}

impl Entry {
    fn forgotten(&self, now: Instant) -> bool {
        self.until <= now && now.saturating_duration_since(self.last) >= QUIET
    }

    fn fail(&mut self, now: Instant) {
        if self.forgotten(now) {
            self.failures = 0;
        }
        self.failures = self.failures.saturating_add(1);
        self.last = now;
        if self.failures >= FREE {
            let doublings = (self.failures - FREE).min(6);
            self.until = now + (FIRST_LOCKOUT * (1 << doublings)).min(MAX_LOCKOUT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn free_failures_then_doubling_lockouts() {
        let t = Throttle::new();
        let now = Instant::now();
        for _ in 0..FREE - 1 {
            t.failed_at(A, None, now);
            assert_eq!(t.check_at(A, None, now), Ok(()));
        }
        t.failed_at(A, None, now);
        assert_eq!(t.check_at(A, None, now), Err(secs(1)));
        assert_eq!(
            t.check_at(B, None, now),
            Ok(()),
            "another address is not affected"
        );
        let now = now + secs(1);
        assert_eq!(t.check_at(A, None, now), Ok(()), "the lockout ends");
        t.failed_at(A, None, now);
        assert_eq!(t.check_at(A, None, now), Err(secs(2)));
        let mut now = now + secs(2);
        for _ in 0..10 {
            t.failed_at(A, None, now);
            now += secs(60);
        }
        t.failed_at(A, None, now);
        assert_eq!(t.check_at(A, None, now), Err(secs(60)), "capped");
        t.succeeded(A, None);
        assert_eq!(t.check_at(A, None, now), Ok(()), "a success clears it");
        t.failed_at(A, None, now);
        assert_eq!(t.check_at(A, None, now), Ok(()), "counting from zero again");
    }

    #[test]
    fn users_are_counted_across_addresses() {
        let t = Throttle::new();
        let now = Instant::now();
        for i in 0..FREE {
            let ip = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, i as u8));
            t.failed_at(ip, Some(Name::Known("alice")), now);
        }
        assert_eq!(t.check_at(B, Some(Name::Known("alice")), now), Err(secs(1)));
        assert_eq!(t.check_at(B, Some(Name::Known("bob")), now), Ok(()));
        assert_eq!(t.check_at(B, None, now), Ok(()));
    }

    #[test]
    fn quiet_counts_are_forgotten() {
        let t = Throttle::new();
        let now = Instant::now();
        for _ in 0..FREE - 1 {
            t.failed_at(A, None, now);
        }
        let later = now + QUIET;
        t.failed_at(A, None, later);
        assert_eq!(
            t.check_at(A, None, later),
            Ok(()),
            "counted as the first failure"
        );
    }

    #[test]
    fn the_table_is_bounded() {
        let t = Throttle::with_capacity(3);
        let now = Instant::now();
        for i in 0..FREE {
            t.failed_at(A, None, now + secs(u64::from(i)));
        }
        let ip = |i: u8| IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, i));
        t.failed_at(ip(1), None, now + secs(10));
        t.failed_at(ip(2), None, now + secs(11));
        assert!(t.check_at(A, None, now + secs(4)).is_err());
        // Full: the stalest (A, last failed at +4 s) goes.
        t.failed_at(ip(3), None, now + secs(12));
        assert_eq!(t.lock().sources.entries.len(), 3);
        assert_eq!(t.check_at(A, None, now + secs(4)), Ok(()));
    }

    #[test]
    fn ipv6_counts_per_64() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_key(a), source_key(b));
        assert_ne!(source_key(a), source_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(source_key(mapped), A);
    }
}
