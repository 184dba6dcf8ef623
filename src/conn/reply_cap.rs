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

/// Cut an encoded reply that may not go out from `out` (it began at `start`), giving its
/// memory back for the small error that replaces it: `truncate` alone keeps the
/// buffer's capacity, and 100 HTTP/2 streams each holding a 100-byte error in a 32 MiB
/// buffer, uncharged, killed the server.
pub(crate) fn discard_from(out: &mut Vec<u8>, start: usize) {
    out.truncate(start);
    out.shrink_to(start + 1024);
}

/// [`discard_from`] for a `BytesMut`: a buffer that held only the reply is replaced
/// (one shared with earlier replies keeps its capacity until they are written).
pub(crate) fn discard_from_bytes(out: &mut bytes::BytesMut, start: usize) {
    if start == 0 {
        *out = bytes::BytesMut::new();
    } else {
        out.truncate(start);
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

    #[test]
    fn a_discarded_reply_gives_its_memory_back() {
        let mut out = b"[".to_vec();
        out.extend(std::iter::repeat_n(b'x', 8 << 20));
        discard_from(&mut out, 1);
        assert_eq!(out, b"[");
        assert!(out.capacity() < 4096, "capacity {}", out.capacity());
        let mut b = bytes::BytesMut::from(&[7u8; 1 << 20][..]);
        discard_from_bytes(&mut b, 0);
        assert_eq!(b.capacity(), 0);
    }
}
