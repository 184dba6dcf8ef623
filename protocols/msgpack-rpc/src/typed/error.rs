//! Why a type could not be read from, or written as, msgpack.

use crate::error::EncodeError;
use std::fmt;

/// Why a type could not be read from, or written as, msgpack.
///
/// Boxed: every serde call of the typed path returns a `Result<_, Error>`, and with a
/// two-word error a `Result<(), Error>` comes back in registers, not through
/// memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub(super) Box<str>);

impl Error {
    pub(crate) fn new(why: impl Into<String>) -> Self {
        Error(why.into().into_boxed_str())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(msg.to_string())
    }
}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(msg.to_string())
    }
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        Error::new(e.to_string())
    }
}
