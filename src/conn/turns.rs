//! Turns at a scarce stage (inflating compressed bodies), one at a time and fair among
//! sources: one client address with a thousand requests waiting does not keep another
//! address's one request waiting behind all of them.
//!
//! Each source has a line; only the head of each line waits for the stage itself, in
//! a FIFO, so the stage goes round the sources. A line is forgotten once nobody is in
//! it, so the table holds at most one entry per source with a request waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::{Mutex as Line, OwnedMutexGuard, Semaphore, SemaphorePermit};

/// Turns at one stage, fair among sources.
#[derive(Debug)]
pub(crate) struct Turns {
    stage: Semaphore,
    lines: Mutex<HashMap<IpAddr, Arc<Line<()>>>>,
}

/// A source's place: in its line (while waiting), then at the stage (its turn). Its
/// line is forgotten when the last place in it goes, turn or not.
struct Place<'a> {
    turns: &'a Turns,
    source: IpAddr,
    line: Option<Arc<Line<()>>>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut lines = self.turns.lines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(line) = self.line.take() {
            // Ours and the table's: nobody else waits in this line.
            if Arc::strong_count(&line) == 2 {
                lines.remove(&self.source);
            }
        }
    }
}

/// The stage, held until dropped.
pub(crate) struct Turn<'a> {
    _stage: SemaphorePermit<'a>,
    _head: OwnedMutexGuard<()>,
    _place: Place<'a>,
}

impl Default for Turns {
    fn default() -> Self {
        Turns {
            stage: Semaphore::new(1),
            lines: Mutex::new(HashMap::new()),
        }
    }
}

impl Turns {
    /// Wait for `source`'s turn (cancel-safe: a dropped wait leaves no trace).
    pub async fn wait(&self, source: IpAddr) -> Turn<'_> {
        let source = line_of(source);
        let line = {
            let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
            lines.entry(source).or_default().clone()
        };
        let place = Place {
            turns: self,
            source,
            line: Some(line.clone()),
        };
        let head = line.lock_owned().await;
        // Never closed: `Turns` owns the semaphore and outlives every wait on it.
        let stage = self
            .stage
            .acquire()
            .await
            .expect("the stage is never closed");
        Turn {
            _stage: stage,
            _head: head,
            _place: place,
        }
    }

    /// Sources with a request waiting or at the stage.
    #[cfg(test)]
    fn sources(&self) -> usize {
        self.lines.lock().unwrap().len()
    }
}

/// The line a client address waits in: an IPv4 address its own, an IPv6 address its
/// /64's (one host usually holds a whole /64, as the login throttle and the per-client
/// caps count it): with a line per IPv6 address, one host's connections, each from
/// another address of its /64, each had a line of their own and took as many turns
/// each round as it had connections.
fn line_of(source: IpAddr) -> IpAddr {
    match source.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_stage_goes_round_the_sources() {
        let turns = Arc::new(Turns::default());
        let (crowd, one): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = turns.wait(crowd).await;
        let mut tasks = Vec::new();
        for (i, source) in [crowd, crowd, crowd, one].into_iter().enumerate() {
            let (turns, order) = (turns.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let _t = turns.wait(source).await;
                order.lock().unwrap().push(i);
            }));
            // Each waiter is in place before the next arrives.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(turns.sources(), 2);
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let lone = order.iter().position(|&i| i == 3).unwrap();
        assert!(
            lone < 2,
            "the lone source's request comes before the crowd's second: {order:?}"
        );
        assert_eq!(turns.sources(), 0, "lines are forgotten once empty");
    }

    #[tokio::test]
    async fn an_ipv6_host_waits_in_one_line() {
        let turns = Arc::new(Turns::default());
        let held = turns.wait([10, 0, 0, 9].into()).await;
        let mut waiting = Vec::new();
        for i in 1..=5u16 {
            let source: IpAddr = std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 7, 0, 0, 0, i).into();
            let turns = turns.clone();
            waiting.push(tokio::spawn(async move { drop(turns.wait(source).await) }));
        }
        let other: IpAddr = "2001:db8:0:8::1".parse().unwrap();
        let t = turns.clone();
        waiting.push(tokio::spawn(async move { drop(t.wait(other).await) }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            turns.sources(),
            3,
            "the holder, one /64's five addresses in one line, another /64"
        );
        drop(held);
        for w in waiting {
            w.await.unwrap();
        }
        assert_eq!(turns.sources(), 0);
    }

    #[tokio::test]
    async fn a_dropped_wait_leaves_nothing_behind() {
        let turns = Turns::default();
        let source: IpAddr = [10, 0, 0, 1].into();
        let held = turns.wait(source).await;
        let waiting = tokio::time::timeout(Duration::from_millis(20), turns.wait(source)).await;
        assert!(
            waiting.is_err(),
            "the second waits while the first holds the stage"
        );
        drop(held);
        assert_eq!(turns.sources(), 0);
        drop(turns.wait(source).await);
        assert_eq!(turns.sources(), 0);
    }
}
