//! Why the gateway could not start.

/// Why the gateway could not start: bad settings, or an upstream whose verbs could not
/// be learned (down, with no `methods` list to fall back on).
#[derive(Debug)]
pub struct GatewayError(String);

impl GatewayError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        GatewayError(message.into())
    }
}

impl From<crate::config::ConfigError> for GatewayError {
    fn from(e: crate::config::ConfigError) -> Self {
        GatewayError(e.to_string())
    }
}

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GatewayError {}
