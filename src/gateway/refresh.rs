//! Learning the upstreams' verbs again while serving: on SIGHUP, every `refresh`
//! seconds, or when an embedder asks ([`UpstreamRefresher`]).
//!
//! The verbs served are the table's changing set (`verbs/extra.rs`): each refresh
//! builds the new set aside and swaps it in whole, so a call sees either the old set or
//! the new one. A verb whose description did not change is kept as it was (the same
//! `Arc`, with its metric handles). A refresh that fails keeps the upstream's last good
//! verbs; it is logged and counted (`rpcmux_upstream_refresh_failures`).

use crate::config::UpstreamConfig;
use crate::gateway::discover::{self, Found};
use crate::gateway::error::GatewayError;
use crate::gateway::forward::{caller_name, refused, Caller, Upstream};
use crate::verbs::{BatchTarget, UpstreamVerbs, Verb, VerbSet, VerbTable};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A handle that makes the gateway learn its upstreams' verbs again (what `rpcmux
/// serve` does on SIGHUP). Cheap to clone; take it with
/// [`Server::upstream_refresher`](crate::Server::upstream_refresher).
#[derive(Clone)]
pub struct UpstreamRefresher {
    inner: Arc<Inner>,
}

struct Inner {
    extra: Arc<UpstreamVerbs<Verb>>,
    /// Names the table owns (its Rust, built-in and demo verbs, aliases): fixed once
    /// serving, so an upstream verb can never take one.
    taken: HashSet<String>,
    upstreams: Vec<Served>,
    /// Each upstream's last good verbs, in upstream order (earlier upstreams win a name
    /// two of them serve). Held across a refresh: refreshes run one at a time.
    sets: tokio::sync::Mutex<Vec<VerbSet>>,
}

pub(super) struct Served {
    pub up: Arc<Upstream>,
    /// The upstream as a batch target: one per upstream, so that its verbs learned at
    /// different times still group together.
    target: Arc<dyn BatchTarget>,
    pub config: UpstreamConfig,
    failures: AtomicU64,
}

/// Why an upstream's verbs could not be learned at startup. One that is down says so,
/// naming its URL once; the `methods` hint is for one that answers but cannot list them.
fn startup_failure(name: &str, e: &rpcmux_value::RpcError) -> String {
    if refused(e) {
        return format!(
            "{}; its verbs are learned at startup, so rpcmux cannot start without them",
            e.message
        );
    }
    if e.code != crate::codes::ERR_UPSTREAM_UNREACHABLE {
        return format!(
            "upstream {name}: cannot learn its verbs: {} ({}); an upstream that cannot \
             list them needs a `methods` list in its [[upstream]] table \
             (on the command line, --upstream-methods [PREFIX=]NAME,...)",
            e.message, e.code
        );
    }
    let why = e
        .message
        .strip_prefix(&format!("upstream {name} unreachable: "));
    let why = why.unwrap_or(&e.message);
    // Without a prefix the name is the URL, which each address's reason starts with.
    let why = why.strip_prefix(&format!("{name}: ")).unwrap_or(why);
    format!(
        "upstream {name} is down: {why}; its verbs are learned at startup, so start it \
         before rpcmux (or check the URL)"
    )
}

impl UpstreamRefresher {
    /// Discover every upstream (in order) and register its verbs in `table`'s changing
    /// set. Startup: an upstream whose verbs cannot be learned is an error.
    pub(super) async fn start(
        table: &mut VerbTable,
        upstreams: Vec<(Arc<Upstream>, UpstreamConfig)>,
    ) -> Result<UpstreamRefresher, GatewayError> {
        let mut taken: HashSet<String> = table.names().into_iter().collect();
        let mut sets = Vec::with_capacity(upstreams.len());
        let targets: Vec<Arc<dyn BatchTarget>> = upstreams
            .iter()
            .map(|(up, _)| Arc::new(crate::gateway::multicall::Multicall(up.clone())) as _)
            .collect();
        for ((up, c), target) in upstreams.iter().zip(&targets) {
            let (found, source) = discover::discover(up, &c.methods, false)
                .await
                .map_err(|e| GatewayError::new(startup_failure(&up.name, &e)))?;
            let (set, skipped) = build(up, target, c, found, &taken, &VerbSet::default());
            for name in &skipped {
                tracing::warn!(upstream = %up.name, verb = %name, "upstream verb not served: the name is taken");
            }
            tracing::info!(upstream = %up.name, verbs = set.len(), skipped = skipped.len(), source, "upstream verbs registered");
            taken.extend(set.keys().cloned());
            sets.push(set);
        }
        let inner = Inner {
            extra: table.extra.clone(),
            taken: table.names().into_iter().collect(),
            upstreams: upstreams
                .into_iter()
                .zip(targets)
                .map(|((up, config), target)| Served {
                    up,
                    target,
                    config,
                    failures: AtomicU64::new(0),
                })
                .collect(),
            sets: tokio::sync::Mutex::new(sets),
        };
        inner.publish(&inner.sets.lock().await);
        Ok(UpstreamRefresher {
            inner: Arc::new(inner),
        })
    }

    /// Learn every upstream's verbs again. An upstream that cannot be asked keeps the
    /// verbs it had; the error says which failed and why (each is logged too).
    pub async fn refresh(&self) -> Result<(), GatewayError> {
        let mut errors = Vec::new();
        for i in 0..self.inner.upstreams.len() {
            if let Err(e) = self.refresh_one(i).await {
                errors.push(e.to_string());
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(GatewayError::new(errors.join("; "))),
        }
    }

    /// Learn upstream `i`'s verbs again.
    pub(super) async fn refresh_one(&self, i: usize) -> Result<(), GatewayError> {
        let inner = &self.inner;
        let s = &inner.upstreams[i];
        let mut sets = inner.sets.lock().await;
        s.up.reload_secrets(&s.config);
        let found = match discover::discover(&s.up, &s.config.methods, true).await {
            Ok((found, _)) => found,
            Err(e) => {
                s.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(upstream = %s.up.name, error = %e.message, code = e.code, "upstream refresh failed: its verbs as learned before are kept");
                return Err(GatewayError::new(format!(
                    "upstream {}: refresh failed, verbs kept: {} ({})",
                    s.up.name, e.message, e.code
                )));
            }
        };
        // Names taken by the table or an earlier upstream; a later one's are free.
        let mut taken = inner.taken.clone();
        taken.extend(sets[..i].iter().flat_map(|set| set.keys().cloned()));
        let (set, _) = build(&s.up, &s.target, &s.config, found, &taken, &sets[i]);
        let old = &sets[i];
        let added = set.keys().filter(|k| !old.contains_key(*k)).count();
        let removed = old.keys().filter(|k| !set.contains_key(*k)).count();
        let changed = added + removed > 0
            || set
                .iter()
                .any(|(k, v)| old.get(k).is_none_or(|o| !Arc::ptr_eq(o, v)));
        if changed {
            tracing::info!(upstream = %s.up.name, verbs = set.len(), added, removed, "upstream verbs refreshed");
        } else {
            tracing::debug!(upstream = %s.up.name, verbs = set.len(), "upstream verbs unchanged");
        }
        sets[i] = set;
        inner.publish(&sets);
        Ok(())
    }

    /// Start a timer per upstream with a `refresh` period, each learning that
    /// upstream's verbs again every period until `stop`.
    pub(crate) fn spawn_timers(
        &self,
        tracker: &tokio_util::task::TaskTracker,
        stop: tokio_util::sync::CancellationToken,
    ) {
        for (i, s) in self.inner.upstreams.iter().enumerate() {
            let Some(period) = s.config.refresh() else {
                continue;
            };
            let (this, stop) = (self.clone(), stop.clone());
            tracker.spawn(async move {
                let mut tick = tokio::time::interval(period);
                // A refresh slower than the period does not make the next ones pile up.
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await; // the first tick is now: startup just discovered
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tick.tick() => {}
                    }
                    // Failures are logged and counted by refresh_one.
                    let _ = stop.run_until_cancelled(this.refresh_one(i)).await;
                }
            });
        }
        crate::gateway::health::spawn(self.upstreams(), tracker, stop);
    }

    /// Failed refreshes per upstream name, for `/metrics`.
    pub(crate) fn failures(&self) -> Vec<(String, u64)> {
        let ups = self.inner.upstreams.iter();
        ups.map(|s| (s.up.name.clone(), s.failures.load(Ordering::Relaxed)))
            .collect()
    }

    /// Each address as (upstream, url, up), for `/metrics`.
    pub(crate) fn addresses(&self) -> Vec<(String, String, bool)> {
        self.upstreams()
            .flat_map(|u| {
                u.endpoints
                    .iter()
                    .map(|e| (u.name.clone(), e.url.clone(), e.up()))
            })
            .collect()
    }

    /// The upstreams, for the health checks and metrics.
    pub(super) fn upstreams(&self) -> impl Iterator<Item = &Arc<Upstream>> {
        self.inner.upstreams.iter().map(|s| &s.up)
    }
}

impl Inner {
    /// Serve the union of `sets`, earlier upstreams first.
    fn publish(&self, sets: &[VerbSet]) {
        let mut all = VerbSet::default();
        for set in sets {
            for (k, v) in set {
                all.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        self.extra.replace(all);
    }
}

/// The verbs to serve for `found`: public names (`PREFIX.`), minus `system.*` and
/// `rpc.*` (rpcmux answers those for the whole table) and names in `taken` (returned
/// second). A verb described as in `old` is `old`'s.
fn build(
    up: &Arc<Upstream>,
    target: &Arc<dyn BatchTarget>,
    c: &UpstreamConfig,
    found: Vec<Found>,
    taken: &HashSet<String>,
    old: &VerbSet,
) -> (VerbSet, Vec<String>) {
    up.set_multicall(found.iter().any(|f| f.name == "system.multicall"));
    // A table of its own to build them in; its verbs are then taken out.
    let mut t = VerbTable::default();
    let mut skipped = Vec::new();
    for f in found {
        if f.name.starts_with("system.") || f.name.starts_with("rpc.") {
            continue;
        }
        let public = match &c.prefix {
            Some(p) => format!("{p}.{}", f.name),
            None => f.name.clone(),
        };
        if taken.contains(&public) || t.contains(&public) {
            skipped.push(public);
            continue;
        }
        let name: Arc<str> = f.name.into();
        let group = crate::verbs::Group {
            target: target.clone(),
            name: name.clone(),
        };
        let mut b = t.verb(&public).help(&f.help).group(group);
        if let Some(sigs) = f.signatures {
            b = b.signatures(sigs);
        }
        let up = up.clone();
        let registered = b.passthrough(move |params, ctx| {
            let (up, name) = (up.clone(), name.clone());
            async move {
                let who = caller_name(&ctx);
                let caller = Caller {
                    peer: ctx.peer,
                    name: who.as_deref(),
                };
                up.forward(&name, params, caller).await
            }
        });
        // An upstream that lists a name twice: its first entry is served.
        if let Err(e) = registered {
            tracing::warn!(upstream = %c.name(), "upstream verb skipped: {e}");
        }
    }
    let mut set = t.into_verbs();
    for (k, v) in set.iter_mut() {
        if let Some(o) = old.get(k) {
            if o.help == v.help && o.signatures == v.signatures {
                *v = o.clone();
            }
        }
    }
    (set, skipped)
}
