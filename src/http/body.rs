//! Reading an HTTP request body: bounded in bytes, in time and in memory.
//!
//! - Every data frame is copied into one buffer as it arrives. Keeping hyper's frames
//!   instead pinned each read buffer they were cut from: a body sent in 1-byte segments
//!   held ~8 KiB of server memory per body byte.
//! - A body that goes `body_timeout` without a byte is cut (nginx's
//!   `client_body_timeout`), and so is one averaging less than `min_body_rate` bytes a
//!   second once `body_timeout` has passed: a trickle cannot hold a connection forever.
//! - The bytes are charged to the process-wide budget as they arrive; while it is
//!   spent, the body is not read further (backpressure on the client).

use crate::conn::budget::{Budget, Charge, Ticket, SMALL};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Past `max_body` bytes.
    TooLarge,
    /// Stalled past `body_timeout`, or slower than `min_body_rate`.
    TooSlow(String),
    /// The connection failed or the body was malformed.
    Broken(hyper::Error),
}

/// The bounds a body is read within.
pub(crate) struct BodyLimits {
    pub max: usize,
    pub gap: Duration,
    pub min_rate: usize,
}

/// Which of the budget's lanes a body is judged in (see `budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// A body of at most `SMALL` bytes takes the small requests' reserve.
    BySize,
    /// Large whatever its size (a compressed body).
    Large,
}

/// Read the whole body into one buffer, charging it to `budget`.
pub(crate) async fn collect(
    mut body: Incoming,
    declared: Option<u64>,
    limits: &BodyLimits,
    budget: &Arc<Budget>,
    lane: Lane,
) -> Result<(Bytes, Charge), BodyError> {
    if declared.is_some_and(|n| n > limits.max as u64) {
        return Err(BodyError::TooLarge);
    }
    // The size the budget judges a body of `len` bytes by.
    let judged = |len: usize| match lane {
        Lane::BySize => len,
        Lane::Large => usize::MAX,
    };
    // The declared length is trusted only up to 64 KiB ahead of the bytes themselves.
    let first = declared.map_or(0, |n| n as usize).min(64 * 1024);
    let mut buf = BytesMut::with_capacity(first);
    // A body declared small takes the small lane (see `budget`).
    let mut charge = budget.take_judged(first.max(1), judged(first)).await;
    let start = Instant::now();
    let mut waited = Duration::ZERO;
    // Held while this body is large and being read (see `budget`), and what it read past
    // the budget as the oldest.
    let mut ticket: Option<Ticket> = (lane == Lane::Large).then(|| budget.ticket());
    let mut over = budget.overdraft();
    loop {
        let frame = match tokio::time::timeout(limits.gap, body.frame()).await {
            Err(_) => {
                let why = format!(
                    "no body byte for {:?} (body_timeout) after {} bytes",
                    limits.gap,
                    buf.len()
                );
                return Err(BodyError::TooSlow(why));
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(BodyError::Broken(e)),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if buf.len() + data.len() > limits.max {
            return Err(BodyError::TooLarge);
        }
        buf.extend_from_slice(&data);
        drop(data);
        if buf.len() > SMALL && ticket.is_none() {
            ticket = Some(budget.ticket());
        }
        let held = charge.bytes() + over.bytes();
        if buf.len() > held {
            // A body past `SMALL` bytes waits while large requests hold the budget,
            // unless it is the oldest large body being read (see `budget`): what that
            // one reads past the budget is its overdraft.
            let first = |ticket: &Option<Ticket>| ticket.as_ref().is_some_and(Ticket::is_first);
            let room = |len: usize, own: usize| budget.room_for(judged(len), own);
            if !room(buf.len(), charge.bytes()) && !first(&ticket) {
                let wait = Instant::now();
                while !room(buf.len(), charge.bytes()) && !first(&ticket) {
                    budget.freed().await;
                }
                // Time spent waiting on the server is not the client's slowness.
                waited += wait.elapsed();
            }
            if room(buf.len(), charge.bytes()) {
                charge.grow(buf.len() - held);
            } else {
                over.set(over.bytes() + buf.len() - held);
            }
        }
        let elapsed = start.elapsed().saturating_sub(waited);
        if elapsed > limits.gap
            && (buf.len() as f64) < limits.min_rate as f64 * elapsed.as_secs_f64()
        {
            let why = format!(
                "body slower than {} bytes/s (min_body_rate): {} bytes in {elapsed:?}",
                limits.min_rate,
                buf.len()
            );
            return Err(BodyError::TooSlow(why));
        }
    }
    // The call holds the whole body (a request alone may always run).
    charge.grow(over.bytes());
    drop(over);
    Ok((exact(buf), charge))
}

/// A body read into a buffer grown by doubling, cut to its length: the budget is
/// charged its length, and the buffer held up to twice that while its call ran.
fn exact(buf: BytesMut) -> Bytes {
    if buf.capacity() <= buf.len() + buf.len() / 16 {
        return buf.freeze();
    }
    Bytes::from(crate::conn::out::cut_to_length(Vec::from(buf)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_holds_about_its_length() {
        // As `collect` leaves it: 64 KiB first, grown by doubling as data arrived.
        let mut buf = BytesMut::with_capacity(64 * 1024);
        for _ in 0..300 {
            buf.extend_from_slice(&[7; 10_000]);
        }
        let len = buf.len();
        assert!(buf.capacity() > len + len / 16, "{}", buf.capacity());
        let body = exact(buf);
        assert_eq!(body.len(), len);
        // The memory behind a `Bytes` is not visible: its `Vec` again, without a copy.
        let held = Vec::from(body);
        assert!(
            held.capacity() <= len + len / 16,
            "{} bytes held for a body of {len}",
            held.capacity()
        );
    }
}
