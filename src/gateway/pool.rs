//! Connections to one address of an upstream, through `rpcmux::client::Client`.
//!
//! HTTP/1.1 carries one call per connection at a time, so an HTTP address keeps up to
//! `n` keep-alive connections, each lent to one call and given back when it answers.
//! Stream protocols pipeline, so a stream address keeps `n` shared connections and
//! callers take turns round-robin. Either way a connection known to be closed is
//! dropped before use and a new one opened, which is how calls resume after the
//! upstream restarts; one that failed under a call is dropped too.

use rpcmux_client::{Client, ClientError, ClientProto, ConnectOpts, Endpoint, Reply};
use rpcmux_value::Params;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Why a call on this address got no reply, sorted by what the caller may do next.
#[derive(Debug)]
pub(super) enum Failure {
    /// Nothing reached the upstream (no connection, or one found closed before the call
    /// was written): any call may go to the next address.
    NotSent(ClientError),
    /// The call was sent, or may have been, and the connection was lost: only a verb
    /// safe to run twice may go to the next address.
    Lost(ClientError),
    /// The upstream answered with something that is not a reply.
    Bad(ClientError),
    /// The call cannot be written in the upstream's protocol (a string XML cannot hold).
    Unsendable(ClientError),
    /// No reply within the client's own deadline (the upstream's `timeout`).
    TimedOut,
}

/// How long a new connection may take: an address that does not answer a connect in
/// this long counts as down, and the call moves on to the next one.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

enum Kind {
    Http {
        /// Connections between calls, most recently used last.
        idle: Mutex<Vec<Client>>,
        /// One permit per connection that may be open (idle or lent).
        open: Semaphore,
    },
    Stream {
        slots: Vec<tokio::sync::Mutex<Option<Arc<Client>>>>,
        next: AtomicUsize,
    },
}

/// Connections to one address: `HOST:PORT`, or a Unix-domain socket (`unix:/PATH`).
pub(super) struct Pool {
    proto: ClientProto,
    addr: String,
    opts: ConnectOpts,
    kind: Kind,
}

impl Pool {
    /// A pool of at most `n` connections to `addr`; none is opened until a call needs it.
    pub fn new(proto: ClientProto, addr: String, opts: ConnectOpts, n: usize) -> Pool {
        let kind = if proto.pipelines() {
            Kind::Stream {
                slots: (0..n).map(|_| tokio::sync::Mutex::new(None)).collect(),
                next: AtomicUsize::new(0),
            }
        } else {
            Kind::Http {
                idle: Mutex::new(Vec::with_capacity(n)),
                open: Semaphore::new(n),
            }
        };
        Pool {
            proto,
            addr,
            opts,
            kind,
        }
    }

    /// A new connection. Connecting has its own, shorter deadline than the call, so an
    /// address that does not answer leaves time to fail over to the next one.
    async fn connect(&self) -> Result<Client, Failure> {
        let limit = CONNECT_TIMEOUT.min(self.opts.timeout);
        let not_sent = |why: String| Failure::NotSent(ClientError::Connect(why));
        // TCP with Nagle off (small request/reply messages), or a Unix-domain socket.
        let at = Endpoint::parse(&self.addr);
        let io = at.connect(limit).await.map_err(Failure::NotSent)?;
        let opts = self.opts.clone();
        // The HTTP Host header: HOST:PORT, or `localhost` over a socket.
        let host = at.authority();
        let client = match &self.opts.tls {
            None => Client::over(self.proto, io, host, opts).await,
            Some(tls) => {
                let handshake = rpcmux_client::tls_handshake(io, at.host(), tls, self.proto);
                let stream = tokio::time::timeout(limit, handshake)
                    .await
                    .map_err(|_| not_sent(format!("{at}: TLS handshake timed out")))?
                    .map_err(Failure::NotSent)?;
                Client::over(self.proto, stream, host, opts).await
            }
        };
        client.map_err(Failure::NotSent)
    }

    /// A health check: open a connection (TCP or a socket, TLS for https) and close it
    /// again.
    pub async fn probe(&self) -> Result<(), String> {
        match self.connect().await {
            Ok(_) => Ok(()),
            Err(Failure::NotSent(e)) => Err(e.to_string()),
            Err(_) => Err("connection failed".into()),
        }
    }

    /// Call `method` on one of this address's connections. A reused connection found
    /// closed before the call was written is replaced by a new one once, here: that is
    /// the upstream having closed an idle connection, not the address being down.
    pub async fn call(
        &self,
        method: &str,
        params: &Params,
        headers: &[(&str, &str)],
    ) -> Result<Reply, Failure> {
        let mut fresh = false;
        loop {
            let r = match &self.kind {
                Kind::Http { idle, open } => {
                    let _permit = open.acquire().await.expect("never closed");
                    let reused = if fresh { None } else { self.idle_client(idle) };
                    fresh |= reused.is_none();
                    let client = match reused {
                        Some(c) => c,
                        None => self.connect().await?,
                    };
                    let r = client.call_with_headers(method, params, headers).await;
                    if r.is_ok() {
                        idle.lock().unwrap_or_else(|e| e.into_inner()).push(client);
                    }
                    r
                }
                Kind::Stream { slots, next } => {
                    let slot = &slots[next.fetch_add(1, Ordering::Relaxed) % slots.len()];
                    let client = {
                        // Held while connecting: callers behind it wait for this
                        // connection instead of each opening their own.
                        let mut s = slot.lock().await;
                        let live = s.as_ref().filter(|c| !fresh && !c.is_closed()).cloned();
                        match live {
                            Some(c) => c,
                            None => {
                                fresh = true;
                                *s = None;
                                let c = Arc::new(self.connect().await?);
                                *s = Some(c.clone());
                                c
                            }
                        }
                    };
                    client.call_ref(method, params).await
                }
            };
            match r {
                Ok(reply) => return Ok(reply),
                Err(ClientError::NotSent(_)) if !fresh => fresh = true,
                Err(e) => return Err(classify(e)),
            }
        }
    }

    /// An idle HTTP connection not known to be closed, if there is one.
    fn idle_client(&self, idle: &Mutex<Vec<Client>>) -> Option<Client> {
        loop {
            let c = idle.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
            if !c.is_closed() {
                return Some(c);
            }
        }
    }
}

fn classify(e: ClientError) -> Failure {
    match e {
        ClientError::NotSent(_) | ClientError::Connect(_) => Failure::NotSent(e),
        ClientError::Closed(_) | ClientError::Io(_) => Failure::Lost(e),
        ClientError::Timeout(_) => Failure::TimedOut,
        ClientError::Protocol(_) => Failure::Bad(e),
        ClientError::Unsupported(_) => Failure::Unsendable(e),
    }
}
