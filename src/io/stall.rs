//! A stream that remembers since when its writes have been blocked: the peer has stopped
//! reading while output waits. hyper has no write timeout, so the HTTP transport reads
//! this to close such a connection after `send_timeout` (nginx's rule) and free what it
//! holds.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// Since when writes have been blocked, shared between the stream and its watcher.
#[derive(Debug)]
pub(crate) struct StallClock {
    base: Instant,
    /// Milliseconds after `base` plus one when a write was first refused since the last
    /// one that went through; 0: not blocked.
    blocked: AtomicU64,
}

impl StallClock {
    pub(crate) fn new() -> Arc<StallClock> {
        Arc::new(StallClock {
            base: Instant::now(),
            blocked: AtomicU64::new(0),
        })
    }

    /// How long writes have been blocked, if they are.
    pub(crate) fn stalled_for(&self) -> Option<Duration> {
        match self.blocked.load(Ordering::Relaxed) {
            0 => None,
            at => {
                let since = self.base + Duration::from_millis(at - 1);
                Some(Instant::now().saturating_duration_since(since))
            }
        }
    }

    fn saw<T>(&self, r: &Poll<std::io::Result<T>>, wrote: impl Fn(&T) -> bool) {
        match r {
            Poll::Pending => {
                if self.blocked.load(Ordering::Relaxed) == 0 {
                    let at = self.base.elapsed().as_millis() as u64 + 1;
                    self.blocked.store(at, Ordering::Relaxed);
                }
            }
            Poll::Ready(Ok(v)) if wrote(v) => self.blocked.store(0, Ordering::Relaxed),
            Poll::Ready(_) => {}
        }
    }
}

/// `inner`, reporting blocked writes to a [`StallClock`].
pub(crate) struct WriteStall<S> {
    inner: S,
    clock: Arc<StallClock>,
}

impl<S> WriteStall<S> {
    pub(crate) fn new(inner: S, clock: Arc<StallClock>) -> Self {
        WriteStall { inner, clock }
    }

    pub(crate) fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStall<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStall<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.clock.saw(&r, |n| *n > 0);
        r
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.clock.saw(&r, |n| *n > 0);
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.clock.saw(&r, |_| true);
        r
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
