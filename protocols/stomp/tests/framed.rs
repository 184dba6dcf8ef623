//! The codec under tokio-util's `FramedRead`, fed by in-memory readers: what the server
//! will do with a socket.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use rpcmux_stomp::{Command, Item, Limits, StompCodec, StompError};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::FramedRead;

/// A peer that sends `head` and then `fill` bytes forever, counting what was read.
struct Endless {
    head: &'static [u8],
    fill: u8,
    sent: usize,
}

impl AsyncRead for Endless {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = if self.sent < self.head.len() {
            let part = &self.head[self.sent..];
            let n = part.len().min(buf.remaining());
            buf.put_slice(&part[..n]);
            n
        } else {
            let n = buf.remaining().min(64 * 1024);
            buf.put_slice(&vec![self.fill; n]);
            n
        };
        self.sent += n;
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn stream_of_frames_then_clean_close() {
    let wire: &[u8] =
        b"\nSTOMP\naccept-version:1.2\n\n\0SEND\ndestination:q\ncontent-length:3\n\na\0b\0\n";
    let items: Vec<_> = FramedRead::new(wire, StompCodec::default())
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], Item::Heartbeat);
    assert!(matches!(&items[1], Item::Frame(f) if f.command == Command::Stomp));
    assert!(matches!(&items[2], Item::Frame(f) if &f.body[..] == b"a\0b"));
    assert_eq!(items[3], Item::Heartbeat);
}

#[tokio::test]
async fn cut_mid_frame_is_unexpected_eof() {
    let wire: &[u8] = b"SEND\ndestination:q\n\nabc";
    let mut read = FramedRead::new(wire, StompCodec::default());
    assert!(matches!(
        read.next().await,
        Some(Err(StompError::UnexpectedEof))
    ));
    assert!(read.next().await.is_none());
}

/// 100 MB and more with no NUL: refused once past max_frame, having read little more.
#[tokio::test]
async fn endless_body_refused_at_the_cap() {
    let limits = Limits {
        max_frame: 1 << 20,
        ..Limits::default()
    };
    let peer = Endless {
        head: b"SEND\ndestination:q\n\n",
        fill: b'A',
        sent: 0,
    };
    let mut read = FramedRead::new(peer, StompCodec::new(limits));
    assert!(matches!(
        read.next().await,
        Some(Err(StompError::FrameTooLarge { limit })) if limit == 1 << 20
    ));
    let sent = read.get_ref().sent;
    assert!(sent <= (1 << 20) + 128 * 1024, "read {sent} bytes");
    assert!(read.read_buffer().len() <= (1 << 20) + 128 * 1024);
}

#[tokio::test]
async fn endless_command_line_refused_at_once() {
    let peer = Endless {
        head: b"",
        fill: b'S',
        sent: 0,
    };
    let mut read = FramedRead::new(peer, StompCodec::default());
    assert!(matches!(
        read.next().await,
        Some(Err(StompError::BadCommand(_)))
    ));
}
