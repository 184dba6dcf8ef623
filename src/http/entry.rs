//! One HTTP connection, either version: HTTP/2 when it opens with the connection
//! preface ([`super::h2`]), else HTTP/1.x ([`super::service`]). The preface's first line
//! `PRI * HTTP/2.0` also sniffs as an HTTP/1.x request line, so the version is told here,
//! reading on (within the sniff deadline) until the preface matches or cannot.

use crate::conn::ConnInfo;
use crate::io::{Rewind, Stream};
use crate::shared::Shared;
use std::sync::Arc;

/// Serve HTTP on `io`, whichever version it speaks; an HTTP/1.1 connection that
/// upgraded returns its WebSocket session, for the caller to run once this future's
/// memory is let go (`super::service::serve`).
pub(crate) async fn serve<S: Stream>(
    io: Rewind<S>,
    info: ConnInfo,
    shared: Arc<Shared>,
) -> Option<crate::stream::Session> {
    let (h2, io) = opens_with_preface(io, &shared).await?;
    if h2 {
        Box::pin(super::h2::serve(io, info, shared)).await;
        None
    } else {
        super::service::serve(io, info, shared).await
    }
}

/// Whether `io` opens with the HTTP/2 connection preface, reading on (within the sniff
/// deadline) while its first bytes, which made an HTTP/1.x request line `PRI `, still
/// could; with the stream, every byte read kept. `None`: closed or too slow.
async fn opens_with_preface<S: Stream>(
    io: Rewind<S>,
    shared: &Shared,
) -> Option<(bool, Rewind<S>)> {
    use rpcmux_sniff::Probe;
    use tokio::io::AsyncReadExt;
    let (prefix, mut inner) = io.into_parts();
    if rpcmux_sniff::http2(&prefix) != Probe::NeedMore {
        let h2 = rpcmux_sniff::http2(&prefix) == Probe::Match;
        return Some((h2, Rewind::new(prefix, inner)));
    }
    let mut buf = bytes::BytesMut::from(&prefix[..]);
    let read = async {
        loop {
            match rpcmux_sniff::http2(&buf) {
                Probe::NeedMore => {}
                verdict => return Some(verdict == Probe::Match),
            }
            let want = rpcmux_sniff::HTTP2_PREFACE.len() - buf.len();
            match (&mut inner).take(want as u64).read_buf(&mut buf).await {
                Ok(n) if n > 0 => {}
                _ => return None,
            }
        }
    };
    let deadline = shared.config.limits.sniff_timeout();
    let h2 = tokio::time::timeout(deadline, read).await.ok()??;
    Some((h2, Rewind::new(buf.freeze(), inner)))
}
