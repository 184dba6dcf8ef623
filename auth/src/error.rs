//! Why a credentials file cannot be used (its own module: the file's parser and the
//! JWT key loader both report through it).

/// A credentials file that cannot be used: unreadable, not TOML, an unknown key, a
/// malformed password hash, a group that does not exist, a JWT key that does not load.
/// Its `Display` names the file and the place, never a secret.
#[derive(Debug)]
pub struct PolicyError {
    message: String,
}

impl PolicyError {
    /// An error about `origin` (the file), at `place` (a TOML path or a line).
    pub(crate) fn at(origin: &str, place: &str, what: impl std::fmt::Display) -> Self {
        PolicyError {
            message: format!("{origin}: {place}: {what}"),
        }
    }
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}
