//! An event's id: the instance that published it and its place in that instance's
//! publishes. Unique across a fleet (instance ids are random 64-bit numbers) and ordered
//! per publishing instance, so a receiver can drop an event it has already delivered
//! (at-least-once on the wire, exactly once to subscribers) and a client can say "after
//! this one" (`subscribe`'s `since`).
//!
//! Written `ORIGIN-SEQ`, the origin as 16 hex digits and the sequence number in
//! decimal: `3f2a9c0d11e4b7a2-1042`. `"0"` as a `since` means "everything still
//! retained".
//!
//! ## An origin: a node part and an incarnation part
//!
//! An origin is two halves: the high 32 bits name the *node*, a stable hash (FNV-1a) of
//! the host name and where the instance lives (its `[events] dir`, else its listen
//! addresses as configured); the low 32 bits are a random *incarnation*, drawn when the
//! instance first starts. What a client may rely on:
//!
//! - An instance never gives out one id twice (I1): with `[events] dir` it keeps its
//!   origin across restarts and continues its sequence from the log (src/events/log.rs);
//!   without it every start draws a new incarnation, so its ids cannot collide with an
//!   earlier run's.
//! - A `since` from an earlier run of the same instance (same node, another incarnation)
//!   is told apart from one of an instance never heard of (another node): -32007 says
//!   "restarted instance" or "unknown instance", so a follower knows the gap is a restart
//!   and not its own doing. Two instances that share a host and listen addresses (not
//!   possible at one time: the port is taken) or a hash collision of nodes only make an
//!   "unknown" read as "restarted": both are gaps, reported either way.
//! - Uniqueness across a fleet rests on the pair: instances on different hosts or ports
//!   differ by node, and two runs of one node by a 32-bit random incarnation.

use std::fmt;
use std::str::FromStr;

/// An event's id (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventId {
    /// The publishing instance.
    pub origin: u64,
    /// Its publishes so far, this one included (from 1).
    pub seq: u64,
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}-{}", self.origin, self.seq)
    }
}

impl FromStr for EventId {
    type Err = String;

    fn from_str(s: &str) -> Result<EventId, String> {
        // The text shown cut short: a `since` of a megabyte of control characters came
        // back six times as long in the error (an id is at most 37 bytes).
        let bad = || {
            let shown: String = s.chars().take(40).collect();
            format!(
                "{shown:?} is not an event id (ORIGIN-SEQ, e.g. 3f2a9c0d11e4b7a2-1042, or \"0\")"
            )
        };
        let (origin, seq) = s.split_once('-').ok_or_else(bad)?;
        if origin.len() != 16 || seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Ok(EventId {
            origin: u64::from_str_radix(origin, 16).map_err(|_| bad())?,
            seq: seq.parse().map_err(|_| bad())?,
        })
    }
}

/// A random u64 (the standard library's per-process hash keys, the clock and the pid):
/// an instance's id, so instances of a fleet, and one instance's runs, differ; and the
/// fan-out's backoff jitter. Enough for both without a dependency for it.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    h.write_u128(now.map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    h.finish()
}

/// The node half of an origin: a stable hash of the host name and `place` (the events
/// directory, or the listen addresses), the same on every start of the same instance.
pub(crate) fn node_part(place: &str) -> u32 {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let h = fnv1a(&[host.trim().as_bytes(), b"\0", place.as_bytes()]);
    (h >> 32) as u32 ^ h as u32
}

/// FNV-1a, 64-bit: a hash that is the same in every build and run (std's hashers are
/// not promised to be), over `parts` in order.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A new origin for `node`: a fresh random incarnation.
pub(crate) fn new_origin(node: u32) -> u64 {
    (u64::from(node) << 32) | (random_u64() & 0xffff_ffff)
}

/// The node half of `origin` (see the module doc).
pub(crate) fn node_of(origin: u64) -> u32 {
    (origin >> 32) as u32
}

/// Where a subscriber asks to start: everything retained, or after one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// `"0"`: every event still retained.
    Oldest,
    /// After this event.
    After(EventId),
}

impl FromStr for Since {
    type Err = String;

    fn from_str(s: &str) -> Result<Since, String> {
        match s.trim() {
            "0" => Ok(Since::Oldest),
            id => id.parse().map(Since::After),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_garbage_is_refused() {
        let id = EventId {
            origin: 0x3f2a_9c0d_11e4_b7a2,
            seq: 1042,
        };
        assert_eq!(id.to_string(), "3f2a9c0d11e4b7a2-1042");
        assert_eq!("3f2a9c0d11e4b7a2-1042".parse::<EventId>(), Ok(id));
        let max = EventId {
            origin: u64::MAX,
            seq: u64::MAX,
        };
        assert_eq!(max.to_string().parse::<EventId>(), Ok(max));
        assert_eq!("0".parse::<Since>(), Ok(Since::Oldest));
        for bad in [
            "",
            "-",
            "1-2",
            "3f2a9c0d11e4b7a2-",
            "3f2a9c0d11e4b7a2-x",
            "zz2a9c0d11e4b7a2-1",
            "3f2a9c0d11e4b7a2-+1",
            "3f2a9c0d11e4b7a2-99999999999999999999",
        ] {
            assert!(bad.parse::<Since>().is_err(), "{bad:?}");
        }
        let garbage = "\u{1}".repeat(1 << 20);
        let e = garbage.parse::<Since>().unwrap_err();
        assert!(e.len() < 400, "the error echoes {} bytes", e.len());
    }

    #[test]
    fn an_origin_keeps_its_node_and_draws_its_incarnation() {
        let node = node_part("/var/lib/rpcmux");
        assert_eq!(node, node_part("/var/lib/rpcmux"), "stable");
        assert_ne!(node, node_part("127.0.0.1:54321"));
        let (a, b) = (new_origin(node), new_origin(node));
        assert_eq!((node_of(a), node_of(b)), (node, node));
        assert_ne!(a, b, "a new incarnation per start");
        // The published FNV-1a test vector: the hash does not change between builds.
        assert_eq!(fnv1a(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn garbage_is_bounded_in_the_error() {
        let garbage = "\u{1}".repeat(1 << 20);
        let e = garbage.parse::<Since>().unwrap_err();
        assert!(e.len() < 400, "the error echoes {} bytes", e.len());
    }
}
