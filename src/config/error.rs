//! A setting that cannot be used.

/// A setting that cannot be used: which section it is in, and what is wrong, naming
/// the value (the text is what `rpcmux serve` prints).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    section: &'static str,
    message: String,
}

impl ConfigError {
    pub(crate) fn new(section: &'static str, message: impl Into<String>) -> Self {
        ConfigError {
            section,
            message: message.into(),
        }
    }

    /// The section of the settings it is about (`upstream`, ...).
    pub fn section(&self) -> &str {
        self.section
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}
