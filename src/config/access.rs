//! The access log's level (`[ops] access_log`).

use serde::Deserialize;

/// At which level each call is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum AccessLevel {
    /// No line per call (slow calls are still logged).
    Off,
    /// At debug: shown with `RUST_LOG=rpcmux::access=debug`; the default, since a line
    /// per call at 100k calls a second would cost more than the calls.
    #[default]
    Debug,
    /// At info: shown by the default filter.
    Info,
}
