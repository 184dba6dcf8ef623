//! Per-verb policy, set at registration and the same over every protocol: a timeout,
//! and a cap on calls of the verb running at once.

use crate::codes::{ERR_BUSY, ERR_TIMEOUT};
use rpcmux_value::RpcError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// What a call does when its verb already runs `max_concurrent` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WhenBusy {
    /// Wait for one to finish (its timeout, if any, counts the wait).
    #[default]
    Wait,
    /// Fail at once with error -32005.
    Refuse,
}

#[derive(Debug, Default)]
pub(crate) struct Policy {
    pub timeout: Option<Duration>,
    pub limit: Option<Limit>,
    when_busy: WhenBusy,
    /// Only a caller with a principal may call it, whatever the credentials file says
    /// ([`crate::VerbBuilder::authenticated`]).
    pub authenticated: bool,
}

#[derive(Debug)]
pub(crate) struct Limit {
    pub max: usize,
    pub when_busy: WhenBusy,
    pub permits: Arc<Semaphore>,
}

impl Policy {
    pub fn limit(&mut self, n: usize) {
        let n = n.max(1);
        self.limit = Some(Limit {
            max: n,
            when_busy: self.when_busy,
            permits: Arc::new(Semaphore::new(n)),
        });
    }

    pub fn when_busy(&mut self, w: WhenBusy) {
        self.when_busy = w;
        if let Some(l) = &mut self.limit {
            l.when_busy = w;
        }
    }

    /// The policy in words, for `system.methodHelp` (empty when there is none).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.timeout {
            parts.push(format!("timeout {t:?} (error {ERR_TIMEOUT} past it)"));
        }
        if let Some(l) = &self.limit {
            parts.push(match l.when_busy {
                WhenBusy::Wait => format!("at most {} at once (others wait)", l.max),
                WhenBusy::Refuse => {
                    format!("at most {} at once (others get error {ERR_BUSY})", l.max)
                }
            });
        }
        parts.join("; ")
    }
}

pub(crate) fn timed_out(verb: &str, t: Duration) -> RpcError {
    RpcError::new(
        ERR_TIMEOUT,
        format!("{verb} timed out after {t:?} and was cancelled"),
    )
}

pub(crate) fn busy(verb: &str, max: usize) -> RpcError {
    RpcError::new(
        ERR_BUSY,
        format!("{verb} is busy: {max} call(s) already running (max_concurrent)"),
    )
}
