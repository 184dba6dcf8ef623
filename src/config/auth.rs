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
}
