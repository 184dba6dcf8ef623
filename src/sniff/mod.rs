//! Protocol detection from a connection's first bytes.
//!
//! Every probe answers Match / NoMatch / NeedMore on the bytes seen so far, so the
//! decision is made as soon as the bytes are unambiguous (one byte for JSON or
//! msgpack-rpc) and a client that sends one byte at a time still works. The bytes
//! read are kept and replayed to the framer ([`crate::io::Rewind`]). The probes
//! themselves are pure functions on bytes, in rpcmux-sniff; the table and the reads are
//! here.

pub use rpcmux_sniff::{http, json, msgpack_rpc, Probe, ProbeFn};

use crate::config::Proto;
use bytes::BytesMut;
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// What a connection turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detected {
    /// An application protocol: the connection goes to its framer.
    Protocol(Proto),
    /// A TLS ClientHello: a front layer, sniffed again once decrypted.
    Tls,
    /// A PROXY v1/v2 header: a front layer, sniffed again after it.
    ProxyHeader,
}

impl Detected {
    /// Its name in logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Detected::Protocol(p) => p.name(),
            Detected::Tls => "tls",
            Detected::ProxyHeader => "proxy",
        }
    }
}

/// The sniffer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The first probe (in table order) that matched.
    Found(Detected),
    /// No probe can match these bytes.
    Unknown,
    /// Some probe still needs more bytes.
    NeedMore,
}

/// The ordered probe table. Order matters only where two probes could both match
/// the same bytes (a PROXY header also looks like an HTTP request line): the first wins.
#[derive(Clone, Default)]
pub struct Probes(Vec<(Detected, ProbeFn)>);

impl Probes {
    /// An empty table (it decides nothing).
    pub fn new() -> Self {
        Probes(Vec::new())
    }

    /// Add a probe (later layers add TLS and PROXY without touching the others).
    pub fn with(mut self, what: Detected, probe: ProbeFn) -> Self {
        self.0.push((what, probe));
        self
    }

    /// Add a probe in front of the others.
    pub fn with_first(mut self, what: Detected, probe: ProbeFn) -> Self {
        self.0.insert(0, (what, probe));
        self
    }

    /// The verdict on the bytes seen so far: the first match, else more bytes while any
    /// probe needs them.
    pub fn decide(&self, prefix: &[u8]) -> Decision {
        let mut need_more = false;
        for (what, probe) in &self.0 {
            match probe(prefix) {
                Probe::Match => return Decision::Found(*what),
                Probe::NeedMore => need_more = true,
                Probe::NoMatch => {}
            }
        }
        if need_more && !prefix.is_empty() || prefix.is_empty() {
            Decision::NeedMore
        } else {
            Decision::Unknown
        }
    }
}

/// Bytes the sniffer buffers at most before giving up on a connection.
pub const MAX_SNIFF: usize = 4096;

/// Read from `io` into `buf` until the probes decide (or `max` bytes prove undecidable).
/// Each read waits for data (no polling loop); the caller bounds the time.
pub async fn sniff<S: AsyncRead + Unpin>(
    io: &mut S,
    probes: &Probes,
    buf: &mut BytesMut,
    max: usize,
) -> io::Result<Decision> {
    loop {
        match probes.decide(buf) {
            Decision::NeedMore if buf.len() < max => {}
            Decision::NeedMore => return Ok(Decision::Unknown),
            d => return Ok(d),
        }
        // Room for what a first packet usually holds, not for `max`: the buffer is kept
        // (replayed to the framer) and an idle connection should not pin 4 KiB.
        buf.reserve((max - buf.len()).min(512));
        let n = (&mut *io)
            .take((max - buf.len()) as u64)
            .read_buf(buf)
            .await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Probes {
        Probes::new()
            .with(Detected::Protocol(Proto::Http), http)
            .with(Detected::Protocol(Proto::JsonrpcTcp), json)
            .with(Detected::Protocol(Proto::Msgpack), msgpack_rpc)
    }

    #[test]
    fn decides_as_soon_as_unambiguous() {
        let t = table();
        assert_eq!(t.decide(b""), Decision::NeedMore);
        assert_eq!(
            t.decide(b"{"),
            Decision::Found(Detected::Protocol(Proto::JsonrpcTcp))
        );
        assert_eq!(
            t.decide(b" \n ["),
            Decision::Found(Detected::Protocol(Proto::JsonrpcTcp))
        );
        assert_eq!(t.decide(b"  "), Decision::NeedMore);
        assert_eq!(t.decide(b"P"), Decision::NeedMore);
        assert_eq!(t.decide(b"POST"), Decision::NeedMore);
        assert_eq!(
            t.decide(b"POST "),
            Decision::Found(Detected::Protocol(Proto::Http))
        );
        assert_eq!(
            t.decide(&[0x94, 0x00]),
            Decision::Found(Detected::Protocol(Proto::Msgpack))
        );
        assert_eq!(t.decide(b"\x00\x01"), Decision::Unknown);
        assert_eq!(t.decide(b"hello"), Decision::Unknown);
    }

    #[tokio::test]
    async fn sniff_reads_byte_at_a_time_and_keeps_bytes() {
        let (mut client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for b in b"GET /health HTTP/1.1\r\n" {
                tokio::io::AsyncWriteExt::write_all(&mut client, &[*b])
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
            client
        });
        let mut buf = BytesMut::new();
        let d = sniff(&mut server, &table(), &mut buf, MAX_SNIFF)
            .await
            .unwrap();
        assert_eq!(d, Decision::Found(Detected::Protocol(Proto::Http)));
        assert!(b"GET /health HTTP/1.1\r\n".starts_with(&buf));
        assert!(buf.len() >= 4);
        drop(writer.await);
    }

    #[tokio::test]
    async fn sniff_gives_up_at_max() {
        let (mut client, mut server) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut client, &[b' '; 40])
            .await
            .unwrap();
        let mut buf = BytesMut::new();
        let d = sniff(&mut server, &table(), &mut buf, 32).await.unwrap();
        assert_eq!(d, Decision::Unknown);
        assert_eq!(buf.len(), 32);
    }
}
