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
    /// Believe the client-certificate name a trusted PROXY v2 peer (`proxy_from`)
    /// passes in its SSL TLV (HAProxy's `send-proxy-v2-ssl-cn`), when the proxy says
    /// it verified the certificate: that name is then the caller's principal, as if
    /// rpcmux had verified the certificate itself. Off by default: it extends the
    /// trust in the balancer from addresses to identities.
    pub proxy_cert_names: bool,
}
