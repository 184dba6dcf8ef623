//! Why the gateway could not start.

/// Why the gateway could not start: bad settings, or an upstream whose verbs could not
/// be learned (down, with no `methods` list to fall back on).
#[derive(Debug)]
pub struct GatewayError(
    /// What went wrong, naming the upstream.
    pub String,
);

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GatewayError {}
