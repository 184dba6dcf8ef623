//! What a caller presents, and why it was not enough.

use std::time::Duration;

/// Credentials as a caller presented them (HTTP `Authorization`, STOMP
/// `login`/`passcode`, `rpc.login`'s parameters).
#[derive(Clone)]
pub enum Credentials {
    /// A user name and a password (HTTP Basic, STOMP login/passcode, `rpc.login`
    /// `user` + `password`).
    Password {
        /// The user's name.
        user: String,
        /// The password, as sent.
        password: String,
    },
    /// A bearer token: a JWT (HTTP Bearer, a STOMP passcode that is a JWT,
    /// `rpc.login` `token`).
    Token(String),
}

impl std::fmt::Debug for Credentials {
    /// Never the secret: a `Debug` of credentials may end up in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Password { user, .. } => f
                .debug_struct("Password")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            Credentials::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

/// Why credentials did not make a principal. Its `Display` names no secret and does
/// not say whether the user exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Wrong user name or password, or an invalid token (bad signature, expired, not
    /// yet valid, wrong audience or issuer, a refused algorithm). The detail is for
    /// the server's log at debug level only, never for the caller.
    Rejected {
        /// Why, for the log: "bad password", "token expired", ... never a secret.
        detail: &'static str,
    },
    /// Too many failed attempts from this address or for this user lately: try again
    /// after this long. Nothing was verified.
    Throttled {
        /// When an attempt may succeed again.
        retry_after: Duration,
    },
    /// Too many verifications waiting already: nothing was verified.
    Busy,
    /// This kind of credential is not configured (a token with no `[jwt]` section).
    Unsupported,
}

impl Failure {
    /// Its metric label: `rejected`, `throttled`, `busy`, `unsupported`.
    pub fn label(&self) -> &'static str {
        match self {
            Failure::Rejected { .. } => "rejected",
            Failure::Throttled { .. } => "throttled",
            Failure::Busy => "busy",
            Failure::Unsupported => "unsupported",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Rejected { .. } => f.write_str("invalid credentials"),
            Failure::Throttled { retry_after } => write!(
                f,
                "too many failed attempts; try again in {} s",
                retry_after.as_secs().max(1)
            ),
            Failure::Busy => f.write_str("too many logins in progress; try again shortly"),
            Failure::Unsupported => f.write_str("this kind of credential is not accepted here"),
        }
    }
}
