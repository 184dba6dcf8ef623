//! How long an HTTP/2 reply has waited for its reader, per stream.
//!
//! Under HTTP/2 a peer withholds flow-control window instead of leaving the socket
//! unread: the h2 crate then stops asking the reply body for bytes and the socket never
//! stalls, so HTTP/1.1's write-stall clock sees nothing while the reply sits in memory.
//! Every reply body is ready at once (it is built whole before it is answered), so one
//! that has not been asked for bytes for a while is waiting for window: [`Watch`]ed
//! bodies note when they were last read, and the connection closes when one has waited
//! longer than `send_timeout`.

use crate::http::reply::ReplyBody;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

/// One connection's replies still being sent.
pub(crate) struct Watch {
    since: Instant,
    /// Each reply's last read, in milliseconds since `since`, or [`FREE`]. A slot is
    /// reused by the next reply once its own is sent or dropped, so a reply allocates
    /// nothing here (one `Arc` per reply was one allocation per HTTP/2 call). The list is
    /// as long as the most replies in flight at once (at most the connection's streams),
    /// and trailing free slots past [`KEEP`] are let go.
    replies: Mutex<Vec<Arc<AtomicU64>>>,
}

/// A slot no reply holds.
const FREE: u64 = u64::MAX;

/// Slots kept however many are free.
const KEEP: usize = 16;

impl Watch {
    pub fn new() -> Arc<Watch> {
        Arc::new(Watch {
            since: Instant::now(),
            replies: Mutex::new(Vec::new()),
        })
    }

    fn now(&self) -> u64 {
        self.since.elapsed().as_millis() as u64
    }

    /// `body`, noting when it is read.
    pub fn watch(self: &Arc<Self>, body: ReplyBody) -> Watched {
        let now = self.now();
        let last = match self.replies.lock() {
            Ok(mut replies) => {
                while replies.len() > KEEP
                    && replies
                        .last()
                        .is_some_and(|r| r.load(Ordering::Relaxed) == FREE)
                {
                    replies.pop();
                }
                let free = replies.iter().find(|r| {
                    r.compare_exchange(FREE, now, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                });
                match free {
                    Some(slot) => slot.clone(),
                    None => {
                        let slot = Arc::new(AtomicU64::new(now));
                        replies.push(slot.clone());
                        slot
                    }
                }
            }
            // Poisoned: the reply is sent unwatched.
            Err(_) => Arc::new(AtomicU64::new(now)),
        };
        Watched {
            body,
            last,
            watch: self.clone(),
        }
    }

    /// How long the reply that has waited longest has gone unread; `None` if none waits.
    pub fn longest_wait(&self) -> Option<Duration> {
        let now = self.now();
        let replies = self.replies.lock().ok()?;
        replies
            .iter()
            .map(|last| last.load(Ordering::Relaxed))
            .filter(|&last| last != FREE)
            .map(|last| Duration::from_millis(now.saturating_sub(last)))
            .max()
    }
}

/// A reply body that notes each read in its [`Watch`].
pub(crate) struct Watched {
    body: ReplyBody,
    last: Arc<AtomicU64>,
    watch: Arc<Watch>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Sent or dropped: the slot is the next reply's.
        self.last.store(FREE, Ordering::Relaxed);
    }
}

impl Body for Watched {
    type Data = crate::http::reply::Chunk;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<crate::http::reply::Chunk>, Infallible>>> {
        let this = self.get_mut();
        this.last.store(this.watch.now(), Ordering::Relaxed);
        Pin::new(&mut this.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    #[tokio::test]
    async fn an_unread_reply_waits_a_read_one_does_not() {
        let watch = Watch::new();
        assert_eq!(watch.longest_wait(), None);
        let unread = watch.watch(ReplyBody::from(Full::new(bytes::Bytes::from_static(b"x"))));
        let read = watch.watch(ReplyBody::from(Full::new(bytes::Bytes::from_static(b"y"))));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let got = read.collect().await.unwrap().to_bytes();
        assert_eq!(&got[..], b"y");
        let wait = watch.longest_wait().unwrap();
        assert!(wait >= Duration::from_millis(50), "{wait:?}");
        drop(unread);
        assert_eq!(watch.longest_wait(), None, "a dropped reply waits no more");
    }

    #[tokio::test]
    async fn a_sent_replys_slot_is_the_next_ones() {
        let watch = Watch::new();
        let body = || ReplyBody::from(Full::new(bytes::Bytes::from_static(b"z")));
        // 40 replies in flight at once, then all sent.
        let burst: Vec<Watched> = (0..40).map(|_| watch.watch(body())).collect();
        assert_eq!(watch.replies.lock().unwrap().len(), 40);
        drop(burst);
        assert_eq!(watch.longest_wait(), None);
        // One at a time: the free slots are reused, and those past KEEP let go.
        for _ in 0..100 {
            let one = watch.watch(body());
            assert!(watch.longest_wait().is_some());
            drop(one);
        }
        assert!(watch.replies.lock().unwrap().len() <= KEEP);
        let a = watch.watch(body());
        tokio::time::sleep(Duration::from_millis(30)).await;
        let b = watch.watch(body());
        let wait = watch.longest_wait().unwrap();
        assert!(
            wait >= Duration::from_millis(30),
            "the older reply's wait: {wait:?}"
        );
        drop((a, b));
    }
}
