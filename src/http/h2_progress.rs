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
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

/// One connection's replies still being sent.
pub(crate) struct Watch {
    since: Instant,
    /// Each reply's last read, in milliseconds since `since`; gone when sent or dropped.
    replies: Mutex<Vec<Weak<AtomicU64>>>,
}

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
        let last = Arc::new(AtomicU64::new(self.now()));
        if let Ok(mut replies) = self.replies.lock() {
            // Sent replies are pruned here too, so the list stays as long as the
            // replies in flight (at most the connection's streams).
            replies.retain(|r| r.strong_count() > 0);
            replies.push(Arc::downgrade(&last));
        }
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
            .filter_map(Weak::upgrade)
            .map(|last| Duration::from_millis(now.saturating_sub(last.load(Ordering::Relaxed))))
            .max()
    }
}

/// A reply body that notes each read in its [`Watch`].
pub(crate) struct Watched {
    body: ReplyBody,
    last: Arc<AtomicU64>,
    watch: Arc<Watch>,
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
}
