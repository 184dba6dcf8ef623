//! PROXY protocol v1/v2 (HAProxy, AWS NLB, ...) at the very start of a connection.
//!
//! A load balancer in front of rpcmux prepends a header naming the real client; that
//! address then replaces the socket peer in logs and in what verbs see. Only peers in
//! the trusted networks (`proxy_from`) may send one: anyone else could claim any
//! address, so their header is refused (`front::admit` closes and logs it). The header
//! is read with the sniff deadline, at most [`header::MAX_HEADER`] bytes, and the
//! bytes after it stay with the connection, which is sniffed again (TLS may follow).
//! The probe and the header parser are rpcmux-sniff's.

use crate::conn::refusals::{Refusal, Refusals};
use crate::conn::ConnInfo;
use crate::conn::Stage;
use crate::io::{Rewind, Stream};
use bytes::{Buf, BytesMut};
use header::Parsed;
use ipnet::IpNet;
pub use rpcmux_sniff::proxy as probe;
use rpcmux_sniff::proxy_header as header;
use std::net::IpAddr;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

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
/// address from it into `info` (and, with `cert_names`, the name of the client
/// certificate the proxy verified, as `peer_identity`), and return the rest of the
/// stream. A malformed header,
/// or one not complete by the sniff deadline, is logged and gives `None` (close).
pub(crate) async fn read_header<S: Stream>(
    io: Rewind<S>,
    info: &mut ConnInfo,
    deadline: Duration,
    cert_names: bool,
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
    // A name is believed only from a balancer in `proxy_from`: a header on a Unix
    // socket (`[unix] proxy`) may come from any local process that can open the socket
    // file, and must not let it claim a certificate's name.
    if cert_names && matches!(info.peer, crate::conn::Peer::Tcp(_)) {
        let ssl = h.ssl(&buf);
        if let Some(cn) = ssl.as_ref().and_then(|s| s.verified_cn()) {
            info.peer_identity = Some(cn.into());
        }
    }
    buf.advance(h.len);
    let proxy = info.peer;
    if let Some(client) = h.source {
        info.peer = crate::conn::Peer::Tcp(client);
    }
    info.stage = Stage::Proxied;
    tracing::debug!(
        peer = %info.peer,
        %proxy,
        conn = info.id,
        version = h.version,
        identity = info.peer_identity.as_deref(),
        "PROXY header accepted"
    );
    Some(Rewind::new(buf.freeze(), inner))
}

#[cfg(test)]
mod tests {
    use super::*;

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
