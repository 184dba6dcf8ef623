//! The one parser of a duration flag (SECS), shared by every subcommand's flags.

/// A duration flag (SECS): seconds, fractions allowed; 0 is off; negative is refused.
/// The config file's rule too (`rpcmux::config::check_seconds`).
pub(super) fn seconds(text: &str) -> Result<f64, String> {
    let s: f64 = text.trim().parse().map_err(|_| {
        format!("{text}: expected seconds (0 = off; fractions such as 0.5 allowed)")
    })?;
    rpcmux::config::check_seconds(s)
}
