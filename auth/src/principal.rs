//! Who a caller is, whatever the protocol they came by.

use std::sync::Arc;
use std::time::SystemTime;

/// An authenticated caller: the same name over every protocol. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    name: Arc<str>,
    via: Via,
    /// When its proof stops holding (a token's `exp`): from then on it is treated as
    /// having no credentials.
    expires: Option<SystemTime>,
}

/// How a principal proved who it is (for the access log and the metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Via {
    /// A user name and password from the credentials file.
    Password,
    /// A JWT whose `sub` names it.
    Token,
    /// A verified TLS client certificate (its CN, else its first SAN), here or at a
    /// trusted proxy in front.
    Certificate,
    /// The credentials of the process at the other end of a Unix socket (`uid:1000`).
    Peer,
    /// The embedder's own [`Authenticate`](crate::Authenticate).
    Custom,
}

impl Via {
    /// Its name in logs and metric labels.
    pub fn label(self) -> &'static str {
        match self {
            Via::Password => "password",
            Via::Token => "token",
            Via::Certificate => "certificate",
            Via::Peer => "peer",
            Via::Custom => "custom",
        }
    }
}

impl Principal {
    /// A principal named `name`, proved by `via`.
    pub fn new(name: impl Into<Arc<str>>, via: Via) -> Self {
        Principal {
            name: name.into(),
            via,
            expires: None,
        }
    }
    /// The same principal, whose proof stops holding at `at` (a token's `exp`).
    pub fn expiring(mut self, at: SystemTime) -> Self {
        self.expires = Some(at);
        self
    }
    /// When its proof stops holding, if ever.
    pub fn expires(&self) -> Option<SystemTime> {
        self.expires
    }
    /// Whether its proof still holds: an expired principal is no principal, wherever it
    /// is read (no clock read for one that never expires).
    pub fn is_current(&self) -> bool {
        self.expires.is_none_or(|at| at > SystemTime::now())
    }
    /// Whether `name` has the form only the kernel may vouch for (`uid:1000`, a Unix
    /// socket's peer): a certificate, a PROXY header, a token or an authenticator that
    /// names it is refused, or any of them could claim to be a local user.
    pub fn is_local_user_name(name: &str) -> bool {
        name.starts_with("uid:")
    }
    /// Its name: a user of the credentials file, a token's `sub`, a certificate's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its name, shared.
    pub fn name_arc(&self) -> &Arc<str> {
        &self.name
    }
    /// How it proved who it is.
    pub fn via(&self) -> Via {
        self.via
    }
}
