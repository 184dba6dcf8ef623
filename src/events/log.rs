//! The event log: an instance's origin, its last sequence number and its retained window,
//! kept on disk (`[events] dir`, `--events-dir`) so that a restart, by SIGTERM or SIGKILL,
//! changes nothing a resuming client sees (docs/events.md, "Across a restart").
//!
//! What a client may rely on, with a log:
//!
//! - **No seq given out twice** (I1): the last seq given out is written with every event
//!   of this instance, in the same atomic batch; a restart continues after it, under the
//!   same origin.
//! - **Acknowledged means logged**: an event is appended (written to the operating
//!   system, one `write` of the journal) while the hub holds its delivery lock, before
//!   the publish returns, so before its reply is sent. A process kill (SIGKILL, a panic,
//!   the OOM killer) loses nothing acknowledged: the page cache survives it. An OS crash
//!   or power loss may lose the last events written unless `[events] fsync` is on (an
//!   `fdatasync` per append, ~0.1-0.3 ms; docs/events.md has the figures).
//! - **The window comes back**: on start the log's events are loaded, newest first,
//!   within today's `retain`, `retain_bytes`, `retain_secs` (each event carries the wall
//!   time it was kept), so `subscribe(since=X)` with X from before the restart replays
//!   seamlessly.
//! - **A damaged log is a reported gap, never a panic nor a silent one**: an entry that
//!   does not decode drops it and everything older from the window (a resume from before
//!   it is then -32007, not a replay with a hole); a keyspace that does not open (or
//!   panics opening) is moved aside to `log.corrupt-<unix secs>` and the instance starts
//!   as a new incarnation (a new origin: old ids get -32007 "restarted instance"); an
//!   append that fails (a full disk) stops the log and forgets the origin, so the next
//!   start is a new incarnation too. Each is logged at error.
//! - **One instance per directory**: the directory's `LOCK` file is held (`flock`) while
//!   the instance runs; a second one on it does not start (two would give out the same
//!   ids).
//!
//! The engine is fjall (an LSM keyspace; its journal is recovered, a torn tail dropped, on
//! open): an append is a batch written to its journal, ~3 µs (p99 ~9 µs), where redb's
//! commit per append took 0.2-7 ms (docs/events.md, "Choosing the log's engine"). The
//! log holds exactly the window's events: each append also deletes the keys that left the
//! window since the last one, and fjall's journal and compaction keep the disk bounded.

use crate::events::Event;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How much of the log is loaded: the retention window's bounds
/// (src/events/retention.rs, which depends on this file and not the other way).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "events-log"), allow(dead_code))]
pub(crate) struct Within {
    pub events: usize,
    pub bytes: usize,
    pub age: Duration,
}

/// Where an instance keeps its events across restarts (see the module doc).
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    /// The log's directory (`[events] dir`); none: nothing is kept.
    pub dir: Option<PathBuf>,
    /// What the node half of the origin is made of besides the host name: the
    /// directory, else the listen addresses (src/events/id.rs).
    pub node: String,
    /// `fdatasync` each append (`[events] fsync`).
    pub fsync: bool,
}

/// What the log held when it was opened.
pub(crate) struct Loaded {
    pub origin: u64,
    /// The last seq this origin gave out.
    pub seq: u64,
    /// The retained events, oldest first, with when they were kept.
    pub events: Vec<(Arc<Event>, Instant)>,
}

#[cfg(feature = "events-log")]
pub(crate) use engine::EventLog;

/// Without the `events-log` feature a directory is refused at start.
#[cfg(not(feature = "events-log"))]
#[derive(Debug)]
pub(crate) struct EventLog;

#[cfg(not(feature = "events-log"))]
impl EventLog {
    pub fn open(
        _dir: &std::path::Path,
        _node: u32,
        _fsync: bool,
        _within: Within,
    ) -> std::io::Result<(EventLog, Loaded)> {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "[events] dir is set but rpcmux was built without the `events-log` feature",
        ))
    }

    pub fn append(&mut self, _event: &Event, _own_seq: Option<u64>, _keep: usize) {}
}

#[cfg(feature = "events-log")]
mod engine {
    // Paths from the crate root: the import graph (scripts/check-floors) is per file.
    use crate::events::log::{Loaded, Within as Bounds};
    use crate::events::{id, wire, Event};
    use fjall::{Config, Keyspace, PartitionCreateOptions, PartitionHandle, PersistMode};
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    const ORIGIN: &str = "origin";
    const SEQ: &str = "seq";
    /// The journal's bound (fjall's floor is 24 MiB): with the memtables, what the log
    /// takes on disk beyond the window's own events.
    const JOURNALS: u64 = 64 << 20;
    /// An envelope read back is at most this big (an event kept was encoded by us; this
    /// only stops a damaged length from allocating without bound).
    const MAX_ENTRY: usize = 1 << 30;

    /// The open log (see the module doc).
    pub(crate) struct EventLog {
        keyspace: Keyspace,
        pub(super) events: PartitionHandle,
        meta: PartitionHandle,
        /// The key the next event is kept under, and the oldest key still kept.
        next_key: u64,
        first_key: u64,
        fsync: bool,
        /// An append failed: the log is no longer written (see the module doc).
        failed: bool,
        dir: PathBuf,
        /// Held while the instance runs (`flock` on `LOCK`).
        _lock: std::fs::File,
    }

    impl std::fmt::Debug for EventLog {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("EventLog")
                .field("dir", &self.dir)
                .field("keys", &(self.first_key..self.next_key))
                .finish_non_exhaustive()
        }
    }

    fn err(what: &str, dir: &Path, e: impl std::fmt::Display) -> io::Error {
        io::Error::other(format!("events log {}: {what}: {e}", dir.display()))
    }

    /// Open (or create) the keyspace in `path`; a panic inside the engine is an error.
    fn open_keyspace(path: &Path) -> Result<(Keyspace, PartitionHandle, PartitionHandle), String> {
        let path = path.to_owned();
        let opened = std::panic::catch_unwind(move || -> fjall::Result<_> {
            let keyspace = Config::new(&path)
                .max_journaling_size(JOURNALS)
                .max_write_buffer_size(16 << 20)
                // Read once, at start: no need for fjall's default 32 MiB block cache.
                .cache_size(4 << 20)
                .open()?;
            let events = keyspace.open_partition("events", PartitionCreateOptions::default())?;
            let meta = keyspace.open_partition("meta", PartitionCreateOptions::default())?;
            Ok((keyspace, events, meta))
        });
        match opened {
            Ok(Ok(k)) => Ok(k),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the storage engine panicked opening it".into()),
        }
    }

    fn u64_of(bytes: &[u8]) -> Option<u64> {
        Some(u64::from_be_bytes(bytes.try_into().ok()?))
    }

    /// Hold `dir/LOCK` for the life of the process (released when it exits, however).
    fn lock(dir: &Path) -> io::Result<std::fs::File> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("LOCK"))
            .map_err(|e| err("cannot open its LOCK file", dir, e))?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor this function owns; no memory is passed.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                return Err(err(
                    "held by another process (one instance per directory: two would give out the same event ids)",
                    dir,
                    io::Error::last_os_error(),
                ));
            }
        }
        Ok(file)
    }

    impl EventLog {
        /// Open the log in `dir` (created if missing): its origin (a new one for `node`
        /// if it has none), last seq and the events within `bounds`, newest kept.
        pub fn open(
            dir: &Path,
            node: u32,
            fsync: bool,
            bounds: Bounds,
        ) -> io::Result<(EventLog, Loaded)> {
            std::fs::create_dir_all(dir).map_err(|e| err("cannot create it", dir, e))?;
            let lock = lock(dir)?;
            let path = dir.join("log");
            let (keyspace, events, meta) = match open_keyspace(&path) {
                Ok(k) => k,
                Err(why) => {
                    let secs = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    // A free name (two damaged logs within one second keep both).
                    let aside = (0..100)
                        .map(|n| match n {
                            0 => dir.join(format!("log.corrupt-{secs}")),
                            n => dir.join(format!("log.corrupt-{secs}-{n}")),
                        })
                        .find(|p| !p.exists())
                        .unwrap_or_else(|| dir.join(format!("log.corrupt-{secs}-last")));
                    tracing::error!(
                        dir = %dir.display(),
                        error = %why,
                        moved_to = %aside.display(),
                        "events log: cannot be opened; moved aside, starting as a new incarnation \
                         (resumes from before this start get -32007 \"restarted instance\")"
                    );
                    std::fs::rename(&path, &aside)
                        .map_err(|e| err("cannot move the damaged log aside", dir, e))?;
                    open_keyspace(&path).map_err(|e| err("cannot create it", dir, e))?
                }
            };
            let mut log = EventLog {
                keyspace,
                events,
                meta,
                next_key: 0,
                first_key: 0,
                fsync,
                failed: false,
                dir: dir.to_owned(),
                _lock: lock,
            };
            let loaded = log.load(node, bounds)?;
            Ok((log, loaded))
        }

        fn get_u64(&self, key: &str) -> io::Result<Option<u64>> {
            let v = self
                .meta
                .get(key)
                .map_err(|e| err("cannot read", &self.dir, e))?;
            Ok(v.and_then(|v| u64_of(&v)))
        }

        /// Read the origin, the seq and the window back (see [`EventLog::open`]).
        fn load(&mut self, node: u32, bounds: Bounds) -> io::Result<Loaded> {
            let kept = self.get_u64(ORIGIN)?;
            let origin = kept.unwrap_or_else(|| id::new_origin(node));
            let mut seq = if kept.is_some() {
                self.get_u64(SEQ)?.unwrap_or(0)
            } else {
                0
            };
            let now = SystemTime::now();
            let mono = Instant::now();
            let (mut events, mut bytes) = (Vec::new(), 0usize);
            let (mut first, mut last) = (None, None);
            // Newest first, so only what today's bounds keep is read.
            for kv in self.events.iter().rev() {
                let entry = kv.map_err(|e| e.to_string()).and_then(|(k, v)| {
                    let key = u64_of(&k).ok_or("a key is not 8 bytes")?;
                    decode(&v, now).map(|(e, age)| (key, e, age))
                });
                let (key, event, age) = match entry {
                    Ok(x) => x,
                    Err(why) => {
                        tracing::error!(
                            dir = %self.dir.display(),
                            error = %why,
                            kept = events.len(),
                            "events log: an entry does not read back; it and every older one \
                             are left out of the window (resumes from before it get -32007)"
                        );
                        break;
                    }
                };
                last.get_or_insert(key);
                first = Some(key);
                bytes += event.size();
                if events.len() >= bounds.events || bytes > bounds.bytes || age > bounds.age {
                    break;
                }
                if event.id().origin == origin {
                    seq = seq.max(event.id().seq);
                }
                let at = mono.checked_sub(age).unwrap_or(mono);
                events.push((Arc::new(event), at));
            }
            events.reverse();
            // Keys past the last one read are never reused; keys below the window's are
            // deleted by the next append.
            self.next_key = last.map_or(0, |k| k + 1);
            self.first_key = match self.events.first_key_value() {
                Ok(Some((k, _))) => u64_of(&k).unwrap_or(0).min(first.unwrap_or(0)),
                _ => first.unwrap_or(0),
            };
            if kept.is_none() {
                tracing::info!(dir = %self.dir.display(), origin = format_args!("{origin:016x}"), "events log: a new instance id, kept here from now on");
            }
            let mut batch = self.keyspace.batch();
            batch.insert(&self.meta, ORIGIN, origin.to_be_bytes());
            batch.insert(&self.meta, SEQ, seq.to_be_bytes());
            batch
                .durability(Some(PersistMode::SyncData))
                .commit()
                .map_err(|e| err("cannot write", &self.dir, e))?;
            tracing::info!(
                dir = %self.dir.display(),
                origin = format_args!("{origin:016x}"),
                seq,
                events = events.len(),
                "events log: loaded"
            );
            Ok(Loaded {
                origin,
                seq,
                events,
            })
        }

        /// Append `event` (the newest of the window, when `keep` > 0), with this
        /// instance's last seq when it is one of its own, and forget what left the
        /// window: the log keeps the newest `keep` events. A failure stops the log (see
        /// the module doc).
        pub fn append(&mut self, event: &Event, own_seq: Option<u64>, keep: usize) {
            if self.failed {
                return;
            }
            let mut batch = self.keyspace.batch();
            if keep > 0 {
                let mut value = Vec::with_capacity(event.size() + 64);
                let ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                value.extend_from_slice(&ms.to_be_bytes());
                if let Err(e) = wire::encode(&mut value, event) {
                    tracing::error!(event = %event.id(), error = %e, "events log: cannot encode an event");
                    return self.fail();
                }
                batch.insert(&self.events, self.next_key.to_be_bytes(), value);
                self.next_key += 1;
            }
            let keep_from = self.next_key.saturating_sub(keep as u64);
            while self.first_key < keep_from {
                batch.remove(&self.events, self.first_key.to_be_bytes());
                self.first_key += 1;
            }
            if let Some(seq) = own_seq {
                batch.insert(&self.meta, SEQ, seq.to_be_bytes());
            }
            if batch.is_empty() {
                return;
            }
            // Written to the OS before the publish returns (what a process kill cannot
            // take), synced too with `fsync`. `None` would leave it in fjall's buffer.
            let durability = if self.fsync {
                PersistMode::SyncData
            } else {
                PersistMode::Buffer
            };
            if let Err(e) = batch.durability(Some(durability)).commit() {
                tracing::error!(dir = %self.dir.display(), error = %e, "events log: an append failed");
                self.fail();
            }
        }

        /// Stop writing, and forget the origin so the next start is a new incarnation
        /// (this run's events after the failure are not in the log: a resume across them
        /// must be a reported gap, not a seamless-looking one).
        fn fail(&mut self) {
            self.failed = true;
            let forgot = self
                .meta
                .remove(ORIGIN)
                .and_then(|()| self.keyspace.persist(PersistMode::SyncData));
            tracing::error!(
                dir = %self.dir.display(),
                forgot_origin = forgot.is_ok(),
                "events log: stopped; events are delivered but no longer kept, and the next start \
                 takes a new instance id (resumes across it get -32007 \"restarted instance\")"
            );
        }
    }

    /// An entry: the wall time it was kept (ms, big-endian) and the event's envelope;
    /// the event and its age now.
    fn decode(value: &[u8], now: SystemTime) -> Result<(Event, Duration), String> {
        if value.len() < 8 {
            return Err("an entry shorter than its timestamp".into());
        }
        let (ms, envelope) = value.split_at(8);
        let ms = u64_of(ms).unwrap_or(0);
        let kept = UNIX_EPOCH + Duration::from_millis(ms);
        let event = wire::decode(envelope, MAX_ENTRY)?;
        Ok((event, now.duration_since(kept).unwrap_or(Duration::ZERO)))
    }
}

#[cfg(all(test, feature = "events-log"))]
mod tests {
    use super::*;
    use crate::events::retention::{Bounds, Retention};
    use crate::events::{EventHub, EventId, Since};
    use rpcmux_value::{Map, Value};
    use std::time::Duration;

    fn bounds(events: usize) -> Bounds {
        Bounds {
            events,
            bytes: 64 << 20,
            age: Duration::from_secs(300),
        }
    }

    /// A fresh directory for one test.
    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rpcmux-log-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn place(dir: &std::path::Path) -> Place {
        Place {
            dir: Some(dir.to_owned()),
            node: dir.display().to_string(),
            fsync: false,
        }
    }

    fn hub(dir: &std::path::Path, keep: usize) -> EventHub {
        EventHub::with_log(16, bounds(keep), &place(dir)).unwrap()
    }

    fn ids(r: &mut Retention) -> Vec<EventId> {
        r.after(Since::Oldest)
            .unwrap()
            .iter()
            .map(|e| e.id())
            .collect()
    }

    fn event(origin: u64, seq: u64) -> Arc<Event> {
        let mut m = Map::default();
        m.insert("n", Value::Int(seq as i64));
        Arc::new(Event::new("|t", Value::Struct(Box::new(m))).with_id(EventId { origin, seq }))
    }

    #[test]
    fn a_reopened_log_keeps_the_origin_the_seq_and_the_window() {
        let d = dir("reopen");
        let h = hub(&d, 100);
        let origin = h.instance();
        for n in 0..5 {
            h.publish(&format!("|t|{n}"), Map::default());
        }
        // An event of another instance is part of the window too.
        h.deliver(&event(0xfeed, 9));
        drop(h);
        let h = hub(&d, 100);
        assert_eq!(h.instance(), origin, "the same instance id");
        h.publish("|t|5", Map::default());
        drop(h);
        let mut r = Retention::open(bounds(100), &place(&d)).unwrap();
        assert_eq!(r.own(), (origin, 6), "seq continued, never reused");
        let want: Vec<EventId> = (1..=5)
            .map(|seq| EventId { origin, seq })
            .chain([
                EventId {
                    origin: 0xfeed,
                    seq: 9,
                },
                EventId { origin, seq: 6 },
            ])
            .collect();
        assert_eq!(ids(&mut r), want);
        // A resume from before the restarts replays seamlessly.
        let after = r.after(Since::After(EventId { origin, seq: 3 })).unwrap();
        assert_eq!(after.len(), 4);
        assert_eq!(after[0].name, "|t|3");
        drop(r);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn todays_bounds_apply_on_load_and_the_seq_survives_them() {
        let d = dir("bounds");
        let h = hub(&d, 100);
        let origin = h.instance();
        for _ in 0..10 {
            h.publish("|t", Map::default());
        }
        drop(h);
        // A smaller window: the newest 3.
        let mut r = Retention::open(bounds(3), &place(&d)).unwrap();
        assert_eq!(
            ids(&mut r).iter().map(|i| i.seq).collect::<Vec<_>>(),
            [8, 9, 10]
        );
        r.push(event(origin, 11));
        drop(r);
        // The log kept only the window's events: a bigger bound finds no more.
        let mut r = Retention::open(bounds(100), &place(&d)).unwrap();
        assert_eq!(
            ids(&mut r).iter().map(|i| i.seq).collect::<Vec<_>>(),
            [9, 10, 11]
        );
        drop(r);
        // Past retain_secs nothing is loaded, and the seq still continues.
        std::thread::sleep(Duration::from_millis(30));
        let aged = Bounds {
            age: Duration::from_millis(10),
            ..bounds(100)
        };
        let mut r = Retention::open(aged, &place(&d)).unwrap();
        assert!(ids(&mut r).is_empty());
        assert_eq!(r.own(), (origin, 11));
        // A zero window keeps nothing but still the seq.
        drop(r);
        let h = EventHub::with_log(16, bounds(0), &place(&d)).unwrap();
        h.publish("|t", Map::default());
        drop(h);
        let r = Retention::open(bounds(100), &place(&d)).unwrap();
        assert_eq!(r.own(), (origin, 12));
        drop(r);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_entry_that_does_not_read_back_cuts_the_window_there() {
        let d = dir("entry");
        let h = hub(&d, 100);
        let origin = h.instance();
        for _ in 0..6 {
            h.publish("|t", Map::default());
        }
        drop(h);
        {
            // The 3rd event's entry damaged (keys count from 0).
            let within = Within {
                events: 100,
                bytes: 64 << 20,
                age: Duration::from_secs(300),
            };
            let (log, _) = EventLog::open(&d, 1, false, within).unwrap();
            log.events
                .insert(2u64.to_be_bytes(), b"\0\0\0\0\0\0\0\0garbage".to_vec())
                .unwrap();
        }
        let mut r = Retention::open(bounds(100), &place(&d)).unwrap();
        assert_eq!(r.own(), (origin, 6));
        assert_eq!(
            ids(&mut r).iter().map(|i| i.seq).collect::<Vec<_>>(),
            [4, 5, 6]
        );
        // Across the damaged one: a reported gap (-32007), not a replay with a hole.
        let e = r
            .after(Since::After(EventId { origin, seq: 1 }))
            .unwrap_err();
        assert_eq!(e.why, crate::events::retention::Why::TooOld);
        drop(r);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_log_that_does_not_open_is_moved_aside_as_a_new_incarnation() {
        let d = dir("corrupt");
        let h = hub(&d, 100);
        let origin = h.instance();
        h.publish("|t", Map::default());
        drop(h);
        // Every file of the keyspace overwritten with garbage: no panic, a new origin
        // of the same node (a restart, reported as one), or the same origin with what
        // the engine could recover (its seq never below what the window shows).
        let mut files = vec![d.join("log")];
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                let len = std::fs::metadata(&p).unwrap().len() as usize;
                std::fs::write(&p, vec![0xa5; len.max(16)]).unwrap();
            }
        }
        let mut r = Retention::open(bounds(100), &place(&d)).unwrap();
        let (now, seq) = r.own();
        assert_eq!(
            crate::events::id::node_of(now),
            crate::events::id::node_of(origin)
        );
        if now == origin {
            assert!(ids(&mut r).iter().all(|i| i.seq <= seq));
        }
        drop(r);
        // A log directory that is not one at all: moved aside, a new incarnation.
        std::fs::remove_dir_all(d.join("log")).unwrap();
        std::fs::write(d.join("log"), b"not a keyspace").unwrap();
        let r = Retention::open(bounds(100), &place(&d)).unwrap();
        assert_ne!(r.own().0, origin);
        assert_eq!(r.own().1, 0);
        assert!(std::fs::read_dir(&d).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("log.corrupt-")));
        drop(r);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn one_instance_per_directory() {
        let d = dir("lock");
        let h = hub(&d, 100);
        let e = EventHub::with_log(16, bounds(100), &place(&d)).unwrap_err();
        assert!(e.to_string().contains("another process"), "{e}");
        drop(h);
        hub(&d, 100);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
