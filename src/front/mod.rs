//! What may come in front of the application protocol: a PROXY header, then TLS.
//!
//! Both are found by the same sniffer as the protocols (their probes sit in the same
//! table), and after either the stream is sniffed again. [`Stage`] records how far a
//! connection has come, so that each layer is admitted at most once and in order:
//! PROXY only as the very first bytes and only from a trusted network, TLS only
//! outside TLS and only when configured, plaintext only where the TLS mode allows.

mod h2_refusal;
mod https_hint;
pub(crate) mod proxy;
pub(crate) mod tls;

use crate::config::{Config, TlsMode};
use crate::conn::{ConnInfo, Stage};
use crate::sniff::{Detected, Probes};
use proxy::Trusted;
use std::io;
use std::time::Duration;
use tls::Tls;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A listener's front-layer settings, built once at bind time.
pub(crate) struct Front {
    tls: Option<Tls>,
    mode: TlsMode,
    trusted: Trusted,
    /// `[unix] proxy`: processes on Unix sockets may send PROXY headers.
    unix_proxy: bool,
}

impl Front {
    /// Load the TLS material (a bad or missing PEM fails here, before any socket is
    /// bound) and the trusted PROXY networks.
    pub fn from_config(config: &Config) -> io::Result<Front> {
        let mode = config.tls.mode();
        let tls = match mode {
            TlsMode::Off => None,
            TlsMode::Optional | TlsMode::Required => Some(Tls::from_config(&config.tls)?),
        };
        if tls.is_some() {
            let mutual = config.tls.client_ca.is_some();
            tracing::info!(?mode, mutual, "TLS on");
        }
        Ok(Front {
            tls,
            mode,
            trusted: Trusted::new(&config.proxy_from),
            unix_proxy: config.unix.proxy,
        })
    }

    /// Is `peer` a trusted PROXY peer (a balancer, whose socket carries many clients)?
    /// Over TCP when `proxy_from` holds its address; on a Unix socket when
    /// `[unix] proxy` is on.
    pub fn trusts(&self, peer: &crate::conn::Peer) -> bool {
        match peer.ip() {
            Some(ip) => self.trusted.contains(ip),
            None => self.unix_proxy,
        }
    }

    pub fn tls(&self) -> Option<&Tls> {
        self.tls.as_ref()
    }

    /// Put the PROXY probe first (a v1 header looks like an HTTP request line) and
    /// the TLS probe after the protocols' (no protocol starts with 0x16). Both are
    /// always there, so a ClientHello to a plaintext listener or a PROXY header from
    /// a stranger is named in the log rather than called an unknown protocol.
    pub fn probes(probes: Probes) -> Probes {
        probes
            .with_first(Detected::ProxyHeader, proxy::probe)
            .with(Detected::Tls, tls::probe)
    }

    /// Whether `detected` may run on this connection at its stage; `Err` says why not.
    pub fn admit(&self, detected: Detected, info: &ConnInfo) -> Result<(), Refused> {
        let refused = match detected {
            Detected::ProxyHeader if info.stage != Stage::Start => Refused::ProxyNotFirst,
            Detected::ProxyHeader if !self.trusts(&info.peer) => Refused::ProxyUntrusted,
            Detected::ProxyHeader => return Ok(()),
            Detected::Tls if info.stage == Stage::Tls => Refused::TlsInTls,
            Detected::Tls if self.tls.is_none() => Refused::TlsOff,
            Detected::Tls => return Ok(()),
            _ if self.mode == TlsMode::Required && info.stage != Stage::Tls => {
                Refused::PlaintextWhenRequired
            }
            _ => return Ok(()),
        };
        Err(refused)
    }
}

/// Why a front layer (or plaintext) was refused on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    ProxyNotFirst,
    ProxyUntrusted,
    TlsInTls,
    TlsOff,
    PlaintextWhenRequired,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::ProxyNotFirst => "PROXY header after the start of the connection",
            Refused::ProxyUntrusted => {
                "PROXY header from an untrusted source (not in proxy_from; on a Unix socket, [unix] proxy is off)"
            }
            Refused::TlsInTls => "TLS inside TLS",
            Refused::TlsOff => "TLS ClientHello but TLS is off",
            Refused::PlaintextWhenRequired => "plaintext refused: TLS is required",
        })
    }
}

/// The answer to a plaintext HTTP/1.x request on a port that requires TLS, as nginx
/// gives one: a short `400` saying so, where closing at once left curl with "Empty reply
/// from server" and Python with `RemoteDisconnected`. `head` is what the sniffer read;
/// its `Host` names the `https://` URL to use. `None` for HTTP/2's preface, answered in
/// HTTP/2 ([`h2_refusal`]).
pub(crate) fn tls_required_reply(head: &[u8]) -> Option<Vec<u8>> {
    if rpcmux_sniff::http2(head) != rpcmux_sniff::Probe::NoMatch {
        return None;
    }
    let host = head
        .split(|b| *b == b'\n')
        .skip(1)
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .find_map(|line| {
            let (name, value) = line.split_at(line.iter().position(|b| *b == b':')?);
            let value = std::str::from_utf8(&value[1..]).ok()?;
            name.eq_ignore_ascii_case(b"host").then_some(value)
        });
    let body = https_hint::tls_required_text(host);
    let mut reply = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    reply.extend_from_slice(body.as_bytes());
    Some(reply)
}

/// Tell a plaintext HTTP client on a port that requires TLS to use `https://`, then
/// close: HTTP/1.x gets [`tls_required_reply`], HTTP/2's preface the same `400` as an
/// HTTP/2 answer ([`h2_refusal::refuse`]). `head` is what the sniffer read.
pub(crate) async fn refuse_plaintext_http<S: AsyncRead + AsyncWrite + Unpin + Send>(
    io: &mut S,
    head: &bytes::Bytes,
) {
    match tls_required_reply(head) {
        Some(reply) => refuse_http1(io, &reply).await,
        None => h2_refusal::refuse(io, head.clone()).await,
    }
}

/// Write `reply` and close gently: the write side first, then what the client still
/// sends (the rest of its request) is read and dropped, at most 64 KiB or one second, so
/// that closing with unread input does not reset the connection under the reply before
/// the client has read it.
async fn refuse_http1<S: AsyncRead + AsyncWrite + Unpin>(io: &mut S, reply: &[u8]) {
    let linger = async {
        io.write_all(reply).await?;
        io.shutdown().await?;
        // On the heap, and only now: an array here is part of the future of every
        // connection's task (`server::conn::handle` awaits this inline), sniffing or
        // serving, for its whole life (it was 4 KiB of each idle connection's 7).
        let mut sink = vec![0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            match io.read(&mut sink).await? {
                0 => break,
                n => left = left.saturating_sub(n),
            }
        }
        io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), linger).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_http_on_a_tls_port_is_told_to_use_https() {
        let reply =
            tls_required_reply(b"POST / HTTP/1.1\r\nHost: localhost:54321\r\nX: y\r\n").unwrap();
        let text = String::from_utf8(reply).unwrap();
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(text.ends_with("(https://localhost:54321/).\n"), "{text}");
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{text}"
        );
        // A Host that is no plain name is not echoed.
        let text =
            String::from_utf8(tls_required_reply(b"GET / HTTP/1.1\r\nhost: a<b>\r\n").unwrap())
                .unwrap();
        assert!(text.ends_with("over https://.\n"), "{text}");
        assert_eq!(
            tls_required_reply(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            None
        );
    }
}
