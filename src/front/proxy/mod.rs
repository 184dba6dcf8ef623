//! PROXY protocol v1/v2 (HAProxy, AWS NLB, ...) at the very start of a connection.
//!
//! A load balancer in front of rpcmux prepends a header naming the real client; that
//! address then replaces the socket peer in logs and in what verbs see. Only peers in
//! the trusted networks (`proxy_from`) may send one: anyone else could claim any
//! address, so their header is refused (`front::admit` closes and logs it). The header
//! is read with the sniff deadline, at most [`header::MAX_HEADER`] bytes, and the
//! bytes after it stay with the connection, which is sniffed again (TLS may follow).

mod header;

/// The private header parser, exposed to the fuzz targets only (`cargo fuzz` builds with
/// `--cfg fuzzing`; see docs/fuzzing.md).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::front::proxy::header::{parse, Header, Parsed, MAX_HEADER};
}

use crate::conn::refusals::{Refusal, Refusals};
use crate::conn::ConnInfo;
use crate::conn::Stage;
use crate::io::{Rewind, Stream};
use crate::sniff::Probe;
use bytes::{Buf, BytesMut};
use header::Parsed;
use ipnet::IpNet;
use std::net::IpAddr;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// The v1 text header's start.
const V1_PREFIX: &[u8] = b"PROXY ";
/// The v2 binary header's 12-byte signature.
const V2_SIGNATURE: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

/// Sniffer probe: the start of a v1 or v2 header. It must run before the HTTP probe,
/// which would take `PROXY ` for a request method.
pub fn probe(p: &[u8]) -> Probe {
    for sig in [V1_PREFIX, V2_SIGNATURE] {
        let n = p.len().min(sig.len());
        if p[..n] == sig[..n] {
            return if n == sig.len() {
                Probe::Match
            } else {
                Probe::NeedMore
            };
        }
    }
    Probe::NoMatch
}

/// The networks whose PROXY headers are believed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trusted(Vec<IpNet>);

impl Trusted {
    pub fn new(nets: &[IpNet]) -> Self {
        Trusted(nets.iter().map(IpNet::trunc).collect())
    }

    /// Whether `ip` (an IPv4-mapped IPv6 address counts as its IPv4 self) is trusted.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// Read the header at the front of `io` (a trusted peer's connection), take the client
/// address from it into `info`, and return the rest of the stream. A malformed header,
/// or one not complete by the sniff deadline, is logged and gives `None` (close).
pub(crate) async fn read_header<S: Stream>(
    io: Rewind<S>,
    info: &mut ConnInfo,
    deadline: Duration,
    shutdown: &CancellationToken,
    refusals: &Refusals,
) -> Option<Rewind<S>> {
    let (prefix, mut inner) = io.into_parts();
    let mut buf = BytesMut::from(&prefix[..]);
    let read = async {
        loop {
            match header::parse(&buf) {
                Parsed::NeedMore if buf.len() < header::MAX_HEADER => {}
                Parsed::NeedMore => return Err("header too long".to_owned()),
                Parsed::Header(h) => return Ok(h),
                Parsed::Malformed(e) => return Err(e),
            }
            let room = (header::MAX_HEADER - buf.len()) as u64;
            match (&mut inner).take(room).read_buf(&mut buf).await {
                Ok(0) => return Err("connection closed inside the header".to_owned()),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    };
    let h = tokio::select! {
        _ = shutdown.cancelled() => return None,
        r = tokio::time::timeout(deadline, read) => r,
    };
    let h = match h {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            let detail = format!("malformed PROXY header: {e}");
            refusals.refuse(Refusal::Front, info.peer, &detail);
            return None;
        }
        Err(_) => {
            let detail = format!("PROXY header not complete by the sniff deadline ({deadline:?})");
            refusals.refuse(Refusal::SniffTimeout, info.peer, &detail);
            return None;
        }
    };
    buf.advance(h.len);
    let proxy = info.peer;
    if let Some(client) = h.source {
        info.peer = client;
    }
    info.stage = Stage::Proxied;
    tracing::debug!(peer = %info.peer, %proxy, conn = info.id, version = h.version, "PROXY header accepted");
    Some(Rewind::new(buf.freeze(), inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_decides_on_the_signature() {
        assert_eq!(probe(b""), Probe::NeedMore);
        assert_eq!(probe(b"PRO"), Probe::NeedMore);
        assert_eq!(probe(b"PROXY "), Probe::Match);
        assert_eq!(probe(b"PROXY TCP4"), Probe::Match);
        assert_eq!(probe(b"PROXYX"), Probe::NoMatch);
        assert_eq!(probe(b"POST "), Probe::NoMatch);
        assert_eq!(probe(b"\r\n\r\n\0"), Probe::NeedMore);
        assert_eq!(probe(V2_SIGNATURE), Probe::Match);
        assert_eq!(probe(b"\r\n\r\nX"), Probe::NoMatch);
        assert_eq!(probe(b"{"), Probe::NoMatch);
    }

    #[test]
    fn trust_by_network() {
        let t = Trusted::new(&["10.1.0.0/16".parse().unwrap(), "::1/128".parse().unwrap()]);
        assert!(t.contains("10.1.200.3".parse().unwrap()));
        assert!(t.contains("::ffff:10.1.0.9".parse().unwrap()), "v4-mapped");
        assert!(t.contains("::1".parse().unwrap()));
        assert!(!t.contains("10.2.0.1".parse().unwrap()));
        assert!(!Trusted::default().contains("127.0.0.1".parse().unwrap()));
    }
}
