//! Stopping the fan-out at shutdown without losing what was acknowledged (MODEL.md I6).
//!
//! A publish is acknowledged once its call replied, and by then its event is in the
//! fan-out's queue, not yet in the engine. So the server stops the fan-out last, after
//! the calls in flight have finished: [`Flush::run`] asks the task to take every event
//! still queued, send it, and return, and waits for it, at most until a deadline (the
//! server's shutdown deadline, what is left of it). What the task could not send by
//! then, because the engine was unreachable or slow, is counted (`unflushed`) and logged
//! as one gap naming its first and last id: the loss is never silent.

use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The server's end: ask the fan-out task to flush, and wait for it.
pub(crate) struct Flush {
    ask: watch::Sender<Option<Instant>>,
    task: JoinHandle<()>,
}

/// The task's end: has a flush been asked for, and until when may it take.
pub(crate) struct Stop {
    asked: watch::Receiver<Option<Instant>>,
    deadline: Option<Instant>,
}

/// A flush handle and the task's end of it.
pub(crate) fn pair() -> (watch::Sender<Option<Instant>>, Stop) {
    let (ask, asked) = watch::channel(None);
    (
        ask,
        Stop {
            asked,
            deadline: None,
        },
    )
}

impl Flush {
    pub(crate) fn new(ask: watch::Sender<Option<Instant>>, task: JoinHandle<()>) -> Flush {
        Flush { ask, task }
    }

    /// Send what waits, within `within`, and stop the task. Returns once it has.
    pub async fn run(self, within: Duration) {
        let _ = self.ask.send(Some(Instant::now() + within));
        let _ = self.task.await;
    }
}

impl Stop {
    /// Resolves when a flush is asked for (at once when the handle is gone without
    /// asking: a server dropped before it ran stops its fan-out without waiting), and
    /// from then on [`Stop::flushing`] is true. Cancel-safe.
    pub async fn asked(&mut self) {
        let deadline = match self.asked.wait_for(Option::is_some).await {
            Ok(d) => d.unwrap_or_else(Instant::now),
            Err(_) => Instant::now(),
        };
        self.deadline = Some(deadline);
    }

    /// Flushing: taking what is queued and sending it, then stopping.
    pub fn flushing(&self) -> bool {
        self.deadline.is_some()
    }

    /// When the flush must end (far away while none was asked for).
    pub fn deadline(&self) -> Instant {
        self.deadline
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365))
    }

    /// The flush was asked for and its deadline has passed.
    pub fn passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}
