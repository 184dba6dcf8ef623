//! The body of an HTTP reply, held against the process's output budget until written.
//!
//! A client that sends a small request for a large reply and never reads it makes the
//! server hold the reply. A big RPC reply is therefore handed to hyper in slices, each
//! carrying its share of the charge to `max_total_output` until hyper has written and
//! dropped it (hyper queues up to 16 slices before it asks for more); the rest stays
//! charged in the body. The charge goes when the reply is written or the connection is
//! dropped. Small bodies (pages, errors, pings) are plain
//! [`Full`] bodies, charged nothing.

use crate::conn::budget::{Budget, Charge};
use bytes::{Buf, Bytes};
use http_body_util::Full;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Bytes handed to hyper at a time.
const SLICE: usize = 64 * 1024;

/// A reply body: a small one whole, a big one in charged slices.
pub(crate) enum ReplyBody {
    Whole(Full<Bytes>),
    /// A small RPC reply as its writer left it: a `Vec` handed to hyper as it is
    /// (`Bytes::from` a `Vec` with spare capacity allocates a header for it: an
    /// allocation per reply). `None` once handed over.
    Owned(Option<Vec<u8>>),
    Charged {
        rest: Bytes,
        charge: Charge,
    },
}

/// What hyper writes a reply from: shared bytes, or a reply's own buffer.
pub(crate) enum Chunk {
    Shared(Bytes),
    Owned(std::io::Cursor<Vec<u8>>),
}

impl Buf for Chunk {
    fn remaining(&self) -> usize {
        match self {
            Chunk::Shared(b) => b.remaining(),
            Chunk::Owned(c) => c.remaining(),
        }
    }
    fn chunk(&self) -> &[u8] {
        match self {
            Chunk::Shared(b) => b.chunk(),
            Chunk::Owned(c) => c.chunk(),
        }
    }
    fn advance(&mut self, n: usize) {
        match self {
            Chunk::Shared(b) => b.advance(n),
            Chunk::Owned(c) => c.advance(n),
        }
    }
}

impl ReplyBody {
    /// `bytes` as a reply body; over [`crate::conn::budget::SMALL`] it is charged to
    /// `budget` by the memory it holds: a buffer grown by doubling is first cut to its
    /// length (a 280 MiB budget once held 520 MiB of replies by their capacity).
    pub(crate) fn charged(mut bytes: Vec<u8>, budget: &Arc<Budget>) -> ReplyBody {
        if bytes.len() <= crate::conn::budget::SMALL {
            bytes.shrink_to(bytes.len() + 1024);
            return ReplyBody::Owned(Some(bytes));
        }
        let bytes = Bytes::from(crate::conn::out::cut_to_length(bytes));
        let charge = budget.charge(bytes.len());
        ReplyBody::Charged {
            rest: bytes,
            charge,
        }
    }
}

impl From<Full<Bytes>> for ReplyBody {
    fn from(full: Full<Bytes>) -> ReplyBody {
        ReplyBody::Whole(full)
    }
}

impl Body for ReplyBody {
    type Data = Chunk;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Chunk>, Infallible>>> {
        match self.get_mut() {
            ReplyBody::Whole(full) => Pin::new(full)
                .poll_frame(cx)
                .map(|f| f.map(|f| f.map(|f| f.map_data(Chunk::Shared)))),
            ReplyBody::Owned(owned) => Poll::Ready(
                owned
                    .take()
                    .filter(|v| !v.is_empty())
                    .map(|v| Ok(Frame::data(Chunk::Owned(std::io::Cursor::new(v))))),
            ),
            ReplyBody::Charged { rest, charge } => {
                if rest.is_empty() {
                    return Poll::Ready(None);
                }
                let slice = rest.split_to(rest.len().min(SLICE));
                // The slice keeps its share of the charge until hyper has written and
                // dropped it (hyper queues up to 16 slices).
                let share = charge.split(slice.len());
                let slice = Bytes::from_owner(ChargedSlice {
                    bytes: slice,
                    _charge: share,
                });
                Poll::Ready(Some(Ok(Frame::data(Chunk::Shared(slice)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReplyBody::Whole(full) => full.is_end_stream(),
            ReplyBody::Owned(owned) => owned.as_ref().is_none_or(Vec::is_empty),
            ReplyBody::Charged { rest, .. } => rest.is_empty(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Whole(full) => full.size_hint(),
            ReplyBody::Owned(owned) => {
                SizeHint::with_exact(owned.as_ref().map_or(0, Vec::len) as u64)
            }
            ReplyBody::Charged { rest, .. } => SizeHint::with_exact(rest.len() as u64),
        }
    }
}

/// A slice handed to hyper and the charge it holds until hyper drops it.
struct ChargedSlice {
    bytes: Bytes,
    _charge: Charge,
}

impl AsRef<[u8]> for ChargedSlice {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// A plain-text reply.
pub(crate) fn text(status: StatusCode, body: &str) -> Response<ReplyBody> {
    with_type(
        status,
        Bytes::copy_from_slice(body.as_bytes()),
        "text/plain; charset=utf-8",
    )
}

/// A reply of `ctype` holding `body`, not charged to the output budget (small
/// answers the server writes itself).
pub(crate) fn with_type(
    status: StatusCode,
    body: Bytes,
    ctype: &'static str,
) -> Response<ReplyBody> {
    let mut r = Response::new(ReplyBody::from(Full::new(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// The body's next data frame, as hyper would take it.
    async fn next_data(body: &mut ReplyBody) -> Option<Chunk> {
        let frame = body.frame().await?.unwrap();
        Some(frame.into_data().ok().expect("a data frame"))
    }

    #[tokio::test]
    async fn a_big_body_is_charged_until_taken_and_comes_out_whole() {
        let budget = Budget::new(1 << 30);
        let data: Bytes = (0..300_000u32).map(|i| i as u8).collect::<Vec<u8>>().into();
        let mut body = ReplyBody::charged(data.to_vec(), &budget);
        assert_eq!(body.size_hint().exact(), Some(300_000));
        assert_eq!(budget.used(), 300_000);
        let first = next_data(&mut body).await.unwrap();
        assert_eq!(first.remaining(), SLICE);
        assert_eq!(
            budget.used(),
            300_000,
            "a slice hyper holds is still charged"
        );
        let mut all = first.chunk().to_vec();
        drop(first);
        assert_eq!(
            budget.used(),
            300_000 - SLICE,
            "a slice written and dropped is not"
        );
        while let Some(chunk) = next_data(&mut body).await {
            all.extend_from_slice(chunk.chunk());
        }
        assert_eq!(all, data);
        assert_eq!(budget.used(), 0);
        let mut small = ReplyBody::charged(b"ok".to_vec(), &budget);
        assert_eq!(budget.used(), 0, "small bodies are not charged");
        assert_eq!(small.size_hint().exact(), Some(2));
        let only = next_data(&mut small).await.unwrap();
        assert_eq!(only.chunk(), b"ok");
        assert!(small.is_end_stream() && small.frame().await.is_none());
        assert!(ReplyBody::charged(Vec::new(), &budget).is_end_stream());
        let dropped = ReplyBody::charged(data.to_vec(), &budget);
        drop(dropped);
        assert_eq!(
            budget.used(),
            0,
            "a dropped connection gives its reply's charge back"
        );
    }
}
