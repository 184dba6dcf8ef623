//! The credentials file, parsed and compiled.

use std::path::Path;

/// A credentials file, parsed and checked: users (argon2id password hashes or none),
/// groups, allow/deny verb globs, event globs, `anonymous`, `[jwt]` keys loaded.
pub struct Policy {
    // Filled in by the implementation.
}

/// A credentials file that cannot be used: unreadable, not TOML, an unknown key, a
/// malformed password hash, a group that does not exist, a JWT key that does not load.
/// Its `Display` names the file and the place, never a secret.
#[derive(Debug)]
pub struct PolicyError {
    message: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}

impl Policy {
    /// Parse a credentials file's text. Relative paths in it (`hs256_secret_file`,
    /// `public_key_file`) are read from `base`.
    pub fn from_toml(text: &str, base: &Path) -> Result<Policy, PolicyError> {
        todo!()
    }

    /// Read and parse the credentials file at `path`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        todo!()
    }

    /// Whether a user of this name is in the file.
    pub fn has_user(&self, name: &str) -> bool {
        todo!()
    }
}
