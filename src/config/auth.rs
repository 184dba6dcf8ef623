//! `[auth]`: who may call what (docs/auth.md).

use serde::Deserialize;
use std::path::PathBuf;

/// Authentication and permissions (`[auth]`, `--auth`). With no `file` every caller may
/// call every verb, as before.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// The credentials file (users, groups, allow/deny globs, `anonymous`, `[jwt]`),
    /// reloaded on SIGHUP. Relative to the working directory.
    pub file: Option<PathBuf>,
    /// Believe the client-certificate name a trusted PROXY v2 peer (`proxy_from`) passes
    /// in its SSL TLV (HAProxy's `send-proxy-v2-ssl-cn`), when it says the certificate
    /// was verified. Off by default: only turn it on when every peer in `proxy_from`
    /// verifies client certificates against a CA you trust.
    pub proxy_cert_names: bool,
}
