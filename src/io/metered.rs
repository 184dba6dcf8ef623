//! A stream that counts the bytes through it into a protocol's `/metrics` counters.

use prometheus_client::metrics::counter::Counter;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `inner`, counting bytes read into `received` and written into `sent` (when metrics
/// are on; otherwise a plain pass-through).
pub(crate) struct Metered<S> {
    inner: S,
    counters: Option<(Counter, Counter)>,
}

impl<S> Metered<S> {
    /// Count into `(received, sent)`, or not at all.
    pub fn new(inner: S, counters: Option<(Counter, Counter)>) -> Self {
        Metered { inner, counters }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Some((received, _)) = &this.counters {
            let n = buf.filled().len() - before;
            if n > 0 {
                received.inc_by(n as u64);
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.count_sent(&r);
        r
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.count_sent(&r);
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S> Metered<S> {
    fn count_sent(&self, r: &Poll<std::io::Result<usize>>) {
        if let (Some((_, sent)), Poll::Ready(Ok(n))) = (&self.counters, r) {
            sent.inc_by(*n as u64);
        }
    }
}
