//! `[ops]`: metrics, the access log, readiness and draining (docs/operations.md).

use crate::config::access::AccessLevel;
use crate::config::limits::{seconds, secs, timeout};
use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// What operators watch and how the server leaves a load balancer's rotation
/// (docs/operations.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpsConfig {
    /// Count calls, connections, refusals and bytes, served as Prometheus text at
    /// `GET /metrics` (default on).
    pub metrics: bool,
    /// Serve `/metrics` on this address only (plain HTTP), not on the RPC port.
    pub metrics_listen: Option<SocketAddr>,
    /// Networks (CIDR) whose clients get `/metrics` on the RPC port (default loopback
    /// only: verb names, counts and upstream URLs are not for anyone who can reach the
    /// port); others get 403. `metrics_listen` serves whoever reaches its address.
    pub metrics_from: Vec<ipnet::IpNet>,
    /// The level of the one line logged per call (target `rpcmux::access`).
    pub access_log: AccessLevel,
    /// Seconds past which a call is logged at warn, whatever `access_log` says.
    #[serde(deserialize_with = "seconds")]
    pub slow_call: f64,
    /// Seconds between the start of shutdown and closing the listeners: `GET /ready`
    /// answers 503 meanwhile while connections are still accepted, so a balancer that
    /// polls it takes the server out of rotation before it stops listening.
    #[serde(deserialize_with = "seconds")]
    pub drain_delay: f64,
}

impl Default for OpsConfig {
    fn default() -> Self {
        OpsConfig {
            metrics: true,
            metrics_listen: None,
            metrics_from: vec![
                "127.0.0.0/8".parse().expect("a network"),
                "::1/128".parse().expect("a network"),
            ],
            access_log: Default::default(),
            slow_call: 1.0,
            drain_delay: 0.0,
        }
    }
}

impl OpsConfig {
    /// The `slow_call` field as a `Duration` (0: off, no call is slow).
    pub fn slow_call(&self) -> Duration {
        timeout(self.slow_call)
    }
    /// The `drain_delay` field as a `Duration` (0: off, no delay).
    pub fn drain_delay(&self) -> Duration {
        secs(self.drain_delay)
    }
}
