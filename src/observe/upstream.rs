//! The gateway's metrics: failed refreshes per upstream and whether each address is up.
//! Labels are the configured upstream names and addresses only, so they are bounded by
//! the config file, never by what an upstream or a client sends.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabel {
    upstream: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AddressLabels {
    upstream: String,
    address: String,
}

#[derive(Debug, Default)]
pub(crate) struct UpstreamMetrics {
    refresh_failures: Family<UpstreamLabel, Counter>,
    address_up: Family<AddressLabels, Gauge>,
}

impl UpstreamMetrics {
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "upstream_refresh_failures",
            "Re-discoveries of an upstream's verbs that failed (its previous verbs kept), by upstream",
            self.refresh_failures.clone(),
        );
        r.register(
            "upstream_address_up",
            "1 if calls go to this upstream address first, 0 if it failed its last health check or a recent connect",
            self.address_up.clone(),
        );
    }

    /// Copy the gateway's state in, at scrape time: failed refreshes per upstream, and
    /// (upstream, address, up) per address.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))]
    pub fn update(
        &self,
        failures: impl IntoIterator<Item = (String, u64)>,
        addresses: impl IntoIterator<Item = (String, String, bool)>,
    ) {
        for (upstream, n) in failures {
            let c = self
                .refresh_failures
                .get_or_create(&UpstreamLabel { upstream });
            c.inner().store(n, std::sync::atomic::Ordering::Relaxed);
        }
        for (upstream, address, is_up) in addresses {
            let g = self
                .address_up
                .get_or_create(&AddressLabels { upstream, address });
            g.set(i64::from(is_up));
        }
    }
}
