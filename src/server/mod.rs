//! The server: bound listeners, shared state, the accept loops and graceful shutdown.

mod conn;
mod listener;
mod passed;
mod socket_file;

pub use passed::PassedListener;

use crate::config::{Config, Proto};
use crate::conn::refusals::Refusals;
use crate::events::EventHub;
use crate::shared::Shared;
use crate::sniff::{self, Detected, Probes};
use crate::verbs::VerbTable;
use listener::Listener;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A bound server, ready to run.
pub struct Server {
    listeners: Vec<Listener>,
    /// `[ops] metrics_listen`: `/metrics` alone, off the RPC port.
    metrics_listener: Option<TcpListener>,
    shared: Arc<Shared>,
    /// The fan-out to other instances (`[events] url`), stopped last at shutdown.
    fanout: Option<crate::events::flush::Flush>,
}

impl Server {
    /// Bind every `config.listen` address (port 0 picks a free port). The demo verbs
    /// are added to `verbs` when `config.demo` is set.
    pub async fn bind(config: Config, verbs: VerbTable) -> io::Result<Server> {
        Self::from_listeners(config, verbs, Vec::<PassedListener>::new()).await
    }

    /// Like [`bind`](Self::bind), also serving `listeners`: sockets already bound and
    /// listening, such as those systemd passes on socket activation
    /// ([`systemd::listen_fds`](crate::systemd::listen_fds)). Every `config.listen`
    /// address is bound besides them; set `config.listen` empty to serve only these.
    /// Each is a [`PassedListener`]: a `std::net::TcpListener` or a
    /// `std::os::unix::net::UnixListener` converts into one.
    pub async fn from_listeners(
        config: Config,
        mut verbs: VerbTable,
        listeners: impl IntoIterator<Item = impl Into<PassedListener>>,
    ) -> io::Result<Server> {
        if config.demo {
            #[cfg(feature = "demo")]
            crate::demo::register(&mut verbs).map_err(|e| {
                io::Error::new(io::ErrorKind::AlreadyExists, format!("demo verbs: {e}"))
            })?;
            #[cfg(not(feature = "demo"))]
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "demo = true but rpcmux was built without the `demo` feature",
            ));
        }
        // After the demo and the embedder's verbs: an upstream verb whose name is taken
        // is the one skipped.
        #[cfg(feature = "gateway")]
        let mut upstreams = None;
        if !config.upstream.is_empty() {
            #[cfg(feature = "gateway")]
            {
                let r = crate::gateway::register(&mut verbs, &config.upstream).await;
                upstreams = Some(r.map_err(io::Error::other)?);
            }
            #[cfg(not(feature = "gateway"))]
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "upstreams are set but rpcmux was built without the `gateway` feature",
            ));
        }
        verbs.max_batch = config.limits.max_batch;
        let auth = match &config.auth.file {
            Some(path) => {
                let auth = rpcmux_auth::Auth::from_file(path)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                crate::verbs::register_login(&mut verbs).map_err(io::Error::from)?;
                Some(Arc::new(auth))
            }
            None => None,
        };
        let metrics = config
            .ops
            .metrics
            .then(|| Arc::new(crate::observe::Metrics::new()));
        let access = crate::observe::AccessLog {
            level: config.ops.access_log,
            slow: config.ops.slow_call(),
        };
        verbs.observer = Some(Arc::new(crate::verbs::Observer::new(
            metrics.clone(),
            access,
        )));
        let metrics_listener = match config.ops.metrics_listen {
            Some(addr) if metrics.is_some() => Some(listener::bind(addr, config.limits.backlog)?),
            _ => None,
        };
        let front = crate::front::Front::from_config(&config)?;
        let mut listeners = listeners
            .into_iter()
            .map(|l| match l.into() {
                PassedListener::Tcp(l) => {
                    l.set_nonblocking(true)?;
                    TcpListener::from_std(l).map(Listener::Tcp)
                }
                PassedListener::Unix(l) => {
                    l.set_nonblocking(true)?;
                    tokio::net::UnixListener::from_std(l).map(|listener| Listener::Unix {
                        listener,
                        _file: None,
                    })
                }
            })
            .collect::<io::Result<Vec<_>>>()?;
        for addr in &config.listen {
            listeners.push(Listener::bind(addr, &config.unix, config.limits.backlog)?);
        }
        let probes = crate::front::Front::probes(probes_for(&config.protocols));
        let retain = crate::events::RetentionBounds {
            events: config.events.retain,
            bytes: config.events.retain_bytes,
            age: config.events.retain_for(),
        };
        // The node half of the instance id: where it keeps its events, else where it
        // listens (src/events/id.rs); with a dir, its id and window come from the log.
        let place = crate::events::log::Place {
            dir: config.events.dir.clone(),
            node: match &config.events.dir {
                Some(dir) => dir.display().to_string(),
                None => config.listen.iter().map(|l| format!("{l} ")).collect(),
            },
            fsync: config.events.fsync,
        };
        let events = Arc::new(EventHub::with_log(
            config.limits.max_subscriptions,
            retain,
            &place,
        )?);
        let out_budget = crate::conn::budget::Budget::new(config.limits.max_total_output);
        // Events waiting in outboxes are output held for clients, as replies are.
        events.set_out_budget(out_budget.clone());
        let shutdown = CancellationToken::new();
        // Before listening: a URL this build cannot serve stops the start; an engine
        // that is down does not (it is retried in the background).
        let fanout = crate::events::start(&events, &config.events)?;
        let shared = Arc::new(Shared {
            conns: Arc::new(Semaphore::new(config.limits.max_connections)),
            sniffing: Arc::new(Semaphore::new(config.limits.max_sniffing)),
            verbs: Arc::new(verbs),
            events,
            probes,
            per_ip: crate::conn::per_ip::PerIp::with_subs(
                config.limits.max_connections_per_ip,
                config.limits.max_sniffing_per_ip,
                config.limits.max_subscriptions_per_ip,
            ),
            refusals: Refusals::default(),
            budget: crate::conn::budget::Budget::new(config.limits.max_total_in_flight_bytes),
            out_budget,
            inflating: Default::default(),
            shutdown,
            abort_calls: Default::default(),
            next_conn: AtomicU64::new(0),
            front,
            metrics,
            draining: Default::default(),
            #[cfg(feature = "gateway")]
            upstreams,
            auth,
            config,
        });
        if let Some(auth) = &shared.auth {
            check_verb_globs(auth, &shared.verbs);
        }
        Ok(Server {
            listeners,
            metrics_listener,
            shared,
            fanout,
        })
    }

    /// The bound TCP addresses, with the real ports.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listening()
            .into_iter()
            .filter_map(|l| match l {
                crate::config::Listen::Tcp(a) => Some(a),
                crate::config::Listen::Unix(_) => None,
            })
            .collect()
    }

    /// Every address served, TCP (with the real ports) and Unix-domain sockets.
    pub fn listening(&self) -> Vec<crate::config::Listen> {
        self.listeners.iter().filter_map(Listener::local).collect()
    }

    /// The address `/metrics` is served on when `[ops] metrics_listen` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// A handle that reloads the TLS certificate, key and client CA from their files
    /// (what `rpcmux serve` does on SIGHUP); `None` when TLS is off. Take it before
    /// [`run`](Self::run), which consumes the server.
    pub fn tls_reloader(&self) -> Option<crate::TlsReloader> {
        self.shared.front.tls().map(|tls| tls.reloader())
    }

    /// A handle that learns the upstreams' verbs again (what `rpcmux serve` does on
    /// SIGHUP); `None` without upstreams. Take it before [`run`](Self::run), which
    /// consumes the server.
    #[cfg(feature = "gateway")]
    pub fn upstream_refresher(&self) -> Option<crate::gateway::UpstreamRefresher> {
        self.shared.upstreams.clone()
    }

    /// Check every call against `auth` (who may call what): what `[auth] file` does,
    /// with an `Auth` of the embedder's making, e.g. one with its own
    /// [`Authenticate`](crate::auth::Authenticate). Registers `rpc.login`. Call it
    /// before [`run`](Self::run).
    pub fn set_auth(&mut self, auth: Arc<crate::auth::Auth>) -> io::Result<()> {
        let shared = Arc::get_mut(&mut self.shared)
            .ok_or_else(|| io::Error::other("set_auth: the server is already running"))?;
        if shared.auth.is_none() {
            let verbs = Arc::get_mut(&mut shared.verbs)
                .ok_or_else(|| io::Error::other("set_auth: the verb table is shared"))?;
            crate::verbs::register_login(verbs).map_err(io::Error::from)?;
        }
        check_verb_globs(&auth, &shared.verbs);
        shared.auth = Some(auth);
        Ok(())
    }

    /// The policy in force when authentication is on: [`Auth::reload`] it on SIGHUP
    /// (what `rpcmux serve` does). Take it before [`run`](Self::run).
    ///
    /// [`Auth::reload`]: crate::auth::Auth::reload
    pub fn auth(&self) -> Option<Arc<crate::auth::Auth>> {
        self.shared.auth.clone()
    }

    /// The hub verbs publish events to; embedders may publish too.
    pub fn events(&self) -> Arc<EventHub> {
        self.shared.events.clone()
    }

    /// Serve until `signal` completes; then answer `GET /ready` with 503, keep
    /// accepting for `[ops] drain_delay`, stop accepting, let calls in flight finish
    /// (up to the shutdown timeout), send the events they published to the other
    /// instances (what is left of the timeout, `FLUSH_MIN` at least), and return.
    /// The order is what makes an acknowledged publish reach the fleet (or be counted
    /// and logged as a gap): its event is queued for the fan-out when its call replies,
    /// so the fan-out stops after the calls, not with the listeners.
    pub async fn run(self, signal: impl Future<Output = ()>) {
        let tracker = TaskTracker::new();
        for l in self.listeners {
            tracker.spawn(listener::accept_loop(
                l,
                self.shared.clone(),
                tracker.clone(),
            ));
        }
        // Periodic re-discovery and health checks, until shutdown begins.
        #[cfg(feature = "gateway")]
        if let Some(up) = &self.shared.upstreams {
            up.spawn_timers(&tracker, self.shared.shutdown.clone());
        }
        if let Some(l) = self.metrics_listener {
            tracker.spawn(crate::http::metrics_only::serve(l, self.shared.clone()));
        }
        signal.await;
        self.shared
            .draining
            .store(true, std::sync::atomic::Ordering::Release);
        let drain = self.shared.config.ops.drain_delay();
        if !drain.is_zero() {
            tracing::info!(?drain, "draining: /ready answers 503, still accepting");
            tokio::time::sleep(drain).await;
        }
        tracing::info!("shutting down: no new connections, finishing calls in flight");
        self.shared.shutdown.cancel();
        tracker.close();
        let stopping = tokio::time::Instant::now();
        let deadline = self.shared.config.limits.shutdown_timeout();
        if tokio::time::timeout(deadline, tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                ?deadline,
                "shutdown deadline passed with calls still in flight; cancelling them"
            );
            // Calls still running answer -32001 in their protocol; give the replies a
            // moment to be written before the runtime goes.
            self.shared.abort_calls.fire();
            if tokio::time::timeout(ABORT_GRACE, tracker.wait())
                .await
                .is_err()
            {
                tracing::warn!("connections still open after cancelling their calls; closing");
            }
        }
        if let Some(fanout) = self.fanout {
            let left = deadline.saturating_sub(stopping.elapsed());
            fanout.run(left.clamp(FLUSH_MIN, FLUSH_MAX)).await;
        }
    }
}

/// The least time the fan-out gets to send what the calls published, even when they
/// used the whole shutdown deadline.
const FLUSH_MIN: std::time::Duration = std::time::Duration::from_secs(2);
/// The most: with no shutdown deadline (`shutdown_timeout = 0`), an unreachable engine
/// does not keep the process from exiting.
const FLUSH_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// How long connections get, once their calls are cancelled at the shutdown deadline,
/// to write the error replies.
const ABORT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The probe table for the enabled protocols.
fn probes_for(protocols: &[Proto]) -> Probes {
    let mut p = Probes::new();
    for proto in protocols {
        p = match proto {
            Proto::Http => p.with(Detected::Protocol(Proto::Http), sniff::http),
            Proto::JsonrpcTcp => p.with(Detected::Protocol(Proto::JsonrpcTcp), sniff::json),
            Proto::Msgpack => p.with(Detected::Protocol(Proto::Msgpack), sniff::msgpack_rpc),
            Proto::Stomp => p.with(
                Detected::Protocol(Proto::Stomp),
                crate::stream::stomp::probe,
            ),
        };
    }
    p
}

/// Let `auth` name the credentials file's verb globs that match no verb served (a typo
/// grants or denies nothing, silently): warned now, and by every reload.
fn check_verb_globs(auth: &crate::auth::Auth, verbs: &Arc<VerbTable>) {
    let verbs = verbs.clone();
    auth.know_verbs(move || verbs.names());
    for warning in auth.unmatched_verb_globs() {
        tracing::warn!("credentials file: {warning}");
    }
}
