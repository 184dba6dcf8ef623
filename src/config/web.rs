//! The `[websocket]` and `[web]` sections of the config file: WebSocket bounds and
//! keep-alive, and what browsers may do (origins, the console page).

use serde::Deserialize;
use std::time::Duration;

/// Bounds and keep-alive of WebSocket sessions (`[websocket]`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WsConfig {
    /// One message's payload in bytes, its fragments together (close 1009 past it).
    pub max_message: usize,
    /// One frame's payload in bytes, judged from its header before any of it is
    /// buffered (close 1009 past it).
    pub max_frame: usize,
    /// Frames one fragmented message may arrive in (close 1009 past it).
    pub max_fragments: usize,
    /// Seconds of silence from the peer before the server sends a ping.
    #[serde(deserialize_with = "crate::config::limits::seconds")]
    pub ping_interval: f64,
    /// Seconds after the ping without a byte from the peer before it is taken for dead
    /// and dropped with its subscriptions (close 1001).
    #[serde(deserialize_with = "crate::config::limits::seconds")]
    pub pong_timeout: f64,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            max_message: 16 << 20,
            max_frame: 16 << 20,
            max_fragments: 1024,
            ping_interval: 30.0,
            pong_timeout: 15.0,
        }
    }
}

impl WsConfig {
    /// 0: off (never pinged), as every duration; at least 10 ms otherwise.
    pub(crate) fn ping_interval(&self) -> Duration {
        ws(self.ping_interval)
    }
    /// 0: off (a pinged peer is never dropped for silence).
    pub(crate) fn pong_timeout(&self) -> Duration {
        ws(self.pong_timeout)
    }
}

fn ws(s: f64) -> Duration {
    crate::config::limits::timeout(s).max(Duration::from_millis(10))
}

/// What browsers may do (`[web]`): which foreign origins may open a WebSocket or POST
/// (CORS), and whether `GET /` serves the console page to browsers.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Origins (`scheme://host[:port]`, or `*` for any) allowed besides the server's
    /// own; requests without an `Origin` header (programs) are always allowed.
    pub allowed_origins: Vec<String>,
    /// Serve the console page at `GET /` to browsers (`None`: on when the demo verbs are).
    pub console: Option<bool>,
    /// Host names browsers may reach the server by, besides IP addresses and
    /// `localhost` (and its subdomains): `name`, `.domain` for it and its subdomains, or
    /// `*` for any. A browser's request (it sends `Origin` or `Sec-Fetch-*`, or opens a
    /// WebSocket) naming another `Host` is refused 403: a page whose name an attacker
    /// rebinds to this server's address cannot drive it (DNS rebinding).
    pub allowed_hosts: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_sections_override_and_reject_typos() {
        let c: WsConfig = toml::from_str("ping_interval = 0.5\n").unwrap();
        assert_eq!(c.ping_interval(), Duration::from_millis(500));
        assert_eq!(c.max_fragments, 1024);
        assert!(toml::from_str::<WsConfig>("max_mesage = 1\n").is_err());
        let w: WebConfig = toml::from_str("allowed_origins = [\"*\"]\n").unwrap();
        assert_eq!(w.allowed_origins, ["*"]);
    }
}
