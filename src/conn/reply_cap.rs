//! What one encoded reply may be, whatever the protocol: at most `max_reply` bytes, and
//! a big one only while the process's output budget has room.
//!
//! A reply is held until its client reads it. Clients that send small requests for
//! large replies and never read them would otherwise make the server hold every reply
//! (300 such connections killed it under a 4 GiB limit). While bytes queued for
//! clients are at `max_total_output`, a reply over 64 KiB is replaced by an error
//! (-32006) in the caller's protocol; small replies (a bystander's ping) always go.

use crate::codes::{ERR_OUTPUT_FULL, ERR_REPLY_TOO_LARGE};
use crate::conn::budget::Budget;
use rpcmux_value::RpcError;
use std::sync::Arc;

/// The bounds an encoded reply is checked against.
#[derive(Clone, Debug)]
pub(crate) struct ReplyCap {
    pub max_reply: usize,
    pub budget: Arc<Budget>,
}

impl ReplyCap {
    pub fn new(max_reply: usize, budget: std::sync::Arc<Budget>) -> ReplyCap {
        ReplyCap { max_reply, budget }
    }

    /// The error that replaces a reply of `len` bytes, if it may not go out.
    pub fn check(&self, len: usize) -> Result<(), RpcError> {
        if len > self.max_reply {
            Err(RpcError::new(
                ERR_REPLY_TOO_LARGE,
                format!("reply larger than {} bytes (max_reply)", self.max_reply),
            ))
        } else if !self.budget.admits_reply(len) {
            Err(RpcError::new(
                ERR_OUTPUT_FULL,
                format!(
                    "server busy: clients hold max_total_output of unread replies; this {len}-byte reply was not kept, try again"
                ),
            ))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_replies_wait_for_the_budget_small_ones_never_do() {
        let cap = ReplyCap {
            max_reply: 1 << 20,
            budget: Budget::new(1 << 20),
        };
        assert!(cap.check(512 << 10).is_ok());
        assert_eq!(cap.check(2 << 20).unwrap_err().code, ERR_REPLY_TOO_LARGE);
        let _held = cap.budget.charge(1 << 20);
        assert_eq!(cap.check(512 << 10).unwrap_err().code, ERR_OUTPUT_FULL);
        assert!(cap.check(1000).is_ok(), "a ping's reply still goes");
    }
}
