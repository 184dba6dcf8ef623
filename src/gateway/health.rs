//! Active health checks (`health_interval`): every period, each address of an upstream
//! gets a new connection opened and closed. One that fails is tried by calls only after
//! every other address, until a check succeeds again, so calls stop paying a connect
//! timeout for a replica that is down and come back to it once it answers.

use crate::gateway::forward::Upstream;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Start one checking task per upstream that has a `health_interval`, until `stop`.
pub(super) fn spawn<'a>(
    upstreams: impl Iterator<Item = &'a Arc<Upstream>>,
    tracker: &TaskTracker,
    stop: CancellationToken,
) {
    for up in upstreams {
        let Some(period) = up.health_interval else {
            continue;
        };
        let (up, stop) = (Arc::clone(up), stop.clone());
        tracker.spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                // The addresses at once: one that hangs on connect does not delay the
                // others' verdicts (each connect is bounded by the connect timeout).
                let checks = up.endpoints.iter().map(|e| async {
                    let r = e.pool.probe().await;
                    let why = r.as_ref().err().map_or("", String::as_str).to_owned();
                    e.checked(&up.name, r.is_ok(), &why);
                });
                let _ = stop
                    .run_until_cancelled(futures_util::future::join_all(checks))
                    .await;
            }
        });
    }
}
