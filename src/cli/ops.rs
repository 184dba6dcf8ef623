//! What `rpcmux serve` does for a service manager: serve the sockets systemd passes
//! (socket activation), tell it when the server is ready and when it stops
//! (`Type=notify`), and reload the TLS material on SIGHUP (`systemctl reload`).
//! Outside systemd (no `LISTEN_*`, no `NOTIFY_SOCKET`) only the SIGHUP reload applies.

use rpcmux::config::Listen;
use rpcmux::PassedListener;
use rpcmux::{Config, TlsReloader};
use std::future::Future;

/// The listening sockets systemd passed, with `config.listen` adjusted to go with them.
///
/// The rule: passed sockets replace the *default* address (a socket unit says where to
/// listen, and binding 127.0.0.1:54321 beside it would be a surprise, or fail when the
/// unit uses that very address), while addresses given explicitly (`--listen`, or
/// `listen` in the config file) are bound as well, since the operator asked for them
/// (an admin-only address next to the activated public one, say). An address both
/// places name is served once, on the passed socket: it is the same listener either
/// way, and binding it a second time could only fail ("address in use"), which is what
/// the shipped samples did (docs/rpcmux.socket's `ListenStream=` and docs/rpcmux.toml's
/// `listen` name the same address, so the config also works without systemd). Each such
/// address is logged. (`serve` also says, when a bind fails with "address in use" while
/// systemd passed sockets, that the port may be one of them under another address.)
pub fn inherited(
    config: &mut Config,
    explicit_listen: bool,
) -> std::io::Result<Vec<PassedListener>> {
    #[cfg(target_os = "linux")]
    {
        let passed = rpcmux::systemd::listen_fds()?;
        if !passed.is_empty() {
            if !explicit_listen {
                config.listen.clear();
            }
            let addrs: Vec<Listen> = passed.iter().filter_map(passed_addr).collect();
            config.listen.retain(|l| {
                let dup = addrs.contains(l);
                if dup {
                    tracing::info!(
                        addr = %l,
                        "this listen address is also a socket systemd passed: served once, on the passed socket"
                    );
                }
                !dup
            });
            tracing::info!(
                sockets = passed.len(),
                also_listen = config.listen.len(),
                "serving the sockets systemd passed (socket activation)"
            );
        }
        Ok(passed)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (config, explicit_listen);
        Ok(Vec::new())
    }
}

/// The address a passed socket listens on, as a `listen` entry would name it.
#[cfg(target_os = "linux")]
fn passed_addr(p: &PassedListener) -> Option<Listen> {
    match p {
        PassedListener::Tcp(l) => l.local_addr().ok().map(Listen::Tcp),
        PassedListener::Unix(l) => {
            let a = l.local_addr().ok()?;
            a.as_pathname()
                .map(|p| Listen::Unix(rpcmux::config::UnixAddr::Path(p.to_owned())))
        }
    }
}

/// Tell systemd the server is ready (every listener bound). Nothing without systemd.
pub fn ready(addrs: &[Listen]) {
    notify(&format!("READY=1\nSTATUS={}", listening(addrs)));
}

fn listening(addrs: &[Listen]) -> String {
    let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    format!("listening on {}", list.join(", "))
}

/// `signal`, then tell systemd shutdown has begun.
pub async fn stopping_after(signal: impl Future<Output = ()>) {
    signal.await;
    notify("STOPPING=1\nSTATUS=shutting down");
}

fn notify(state: &str) {
    #[cfg(target_os = "linux")]
    if let Err(e) = rpcmux::systemd::notify(state) {
        tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = state;
}

/// Reload the TLS material and learn the upstreams' verbs again (the gateway) on every
/// SIGHUP, for as long as the runtime lives, telling
/// systemd `RELOADING=1` before and `READY=1` after (with the outcome as `STATUS`), so
/// `Type=notify-reload` works and `systemctl status` shows a failed reload. The handler
/// is installed even with TLS off, so that a SIGHUP (a `systemctl reload`) never kills
/// the server, as its default action would. Call it inside the runtime, before
/// announcing readiness: a SIGHUP may follow at once.
pub fn reload_on_sighup(
    reloader: Option<TlsReloader>,
    upstreams: Option<rpcmux::gateway::UpstreamRefresher>,
    auth: Option<std::sync::Arc<rpcmux::auth::Auth>>,
    addrs: Vec<Listen>,
) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "no SIGHUP handler: TLS reload by signal is off");
                return;
            }
        };
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                #[cfg(target_os = "linux")]
                if let Err(e) = rpcmux::systemd::reloading() {
                    tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
                }
                // Success and failure are both logged by `reload`.
                let outcome = match &reloader {
                    Some(r) => {
                        tracing::info!("SIGHUP: reloading the TLS certificate, key and client CA");
                        // File reads block: on the blocking pool, never on the workers
                        // serving clients (the files are size-capped and must be regular).
                        let r = r.clone();
                        match tokio::task::spawn_blocking(move || r.reload()).await {
                            Ok(Ok(())) => "TLS reloaded".to_string(),
                            Ok(Err(e)) => {
                                format!("TLS reload failed, previous certificate kept: {e}")
                            }
                            Err(e) => format!("TLS reload failed, previous certificate kept: {e}"),
                        }
                    }
                    None => {
                        tracing::info!("SIGHUP: TLS is off, nothing to reload");
                        "nothing to reload".to_string()
                    }
                };
                let outcome = match &upstreams {
                    Some(u) => {
                        tracing::info!("SIGHUP: learning the upstreams' verbs again");
                        match u.refresh().await {
                            Ok(()) => format!("{outcome}; upstream verbs refreshed"),
                            Err(e) => format!("{outcome}; {e}"),
                        }
                    }
                    None => outcome,
                };
                let outcome = match &auth {
                    Some(a) => {
                        tracing::info!("SIGHUP: reading the credentials file again");
                        let a = a.clone();
                        match tokio::task::spawn_blocking(move || a.reload()).await {
                            Ok(Ok(warnings)) => {
                                tracing::info!("credentials reloaded");
                                for warning in &warnings {
                                    tracing::warn!("credentials file: {warning}");
                                }
                                format!("{outcome}; credentials reloaded")
                            }
                            Ok(Err(e)) => {
                                tracing::error!(error = %e, "credentials reload failed, previous ones kept");
                                format!(
                                    "{outcome}; credentials reload failed, previous ones kept: {e}"
                                )
                            }
                            Err(e) => format!("{outcome}; credentials reload failed: {e}"),
                        }
                    }
                    None => outcome,
                };
                // One line: a newline would start another assignment.
                let outcome = outcome.replace('\n', " ");
                notify(&format!("READY=1\nSTATUS={}; {outcome}", listening(&addrs)));
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (reloader, upstreams, auth, addrs);
}
