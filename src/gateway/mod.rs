//! The gateway: the verbs of existing RPC servers ("upstreams") served through rpcmux,
//! on every protocol it speaks (docs/gateway.md).
//!
//! At startup, before serving, each upstream's verbs are discovered and registered in
//! the one [`VerbTable`](crate::VerbTable) as passthrough verbs, beside Rust verbs and
//! under `PREFIX.` when one is set; a call to one is forwarded through
//! [`rpcmux::client::Client`](crate::client::Client) over a small pool of connections,
//! with a timeout, a cap on calls in flight and failover between the upstream's
//! addresses. Values keep their types: client and server share [`Value`](crate::Value).
//!
//! The settings ([`UpstreamConfig`]) and error codes are compiled in every build; the
//! forwarding needs the `gateway` feature (on in `cli`), since it is built on the
//! client.

mod discover;
mod forward;
mod health;
mod multicall;
mod pool;
mod refresh;

mod error;
use crate::config::UpstreamConfig;
pub use error::GatewayError;
pub use refresh::UpstreamRefresher;

/// Discover every upstream's verbs and register them in `table`. Names taken already
/// (a Rust verb, an earlier upstream's) are skipped with a warning, and so are the
/// upstream's `system.*` and `rpc.*` verbs, which rpcmux answers itself. The verbs can
/// be learned again later through the [`UpstreamRefresher`] returned.
pub async fn register(
    table: &mut crate::VerbTable,
    upstreams: &[UpstreamConfig],
) -> Result<UpstreamRefresher, GatewayError> {
    use std::sync::Arc;
    let mut prefixes = std::collections::HashSet::new();
    let mut ups = Vec::with_capacity(upstreams.len());
    for c in upstreams {
        if let Some(p) = &c.prefix {
            if !prefixes.insert(p) {
                return Err(GatewayError::new(format!(
                    "upstream prefix {p:?} given twice: list one upstream's addresses in its url"
                )));
            }
        }
        let up = Arc::new(forward::Upstream::new(c)?);
        ups.push((up, c.clone()));
    }
    UpstreamRefresher::start(table, ups).await
}
