//! Why a verb or an alias could not be registered.

/// A name registered twice: a name means one verb (or one alias), so the second
/// registration is refused and the table keeps the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterError {
    name: String,
}

impl RegisterError {
    pub(crate) fn taken(name: &str) -> Self {
        RegisterError {
            name: name.to_owned(),
        }
    }

    /// The name that was taken already.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is registered twice (a name means one verb; the second registration is refused)",
            self.name
        )
    }
}

impl std::error::Error for RegisterError {}

/// So that a `main` returning `std::io::Result` (as [`Server::bind`] does) can register
/// verbs with `?`.
///
/// [`Server::bind`]: crate::Server::bind
impl From<RegisterError> for std::io::Error {
    fn from(e: RegisterError) -> Self {
        std::io::Error::new(std::io::ErrorKind::AlreadyExists, e)
    }
}
