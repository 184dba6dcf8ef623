//! Byte-stream adapters shared by the transports.

mod metered;
mod rewind;
mod stall;

pub(crate) use metered::Metered;
pub use rewind::Rewind;
pub(crate) use stall::{StallClock, WriteStall};

/// Any stream a transport can run on: plain TCP, TLS, or one of those with
/// sniffed bytes put back in front.
pub trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Stream for T {}
