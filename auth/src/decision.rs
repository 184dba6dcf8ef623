//! What the policy says about one call.

/// The answer to "may this caller call this verb?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allowed,
    /// The caller has no principal and the verb is not in `anonymous`: credentials
    /// might help.
    NotAuthenticated,
    /// The caller's principal may not call it (not allowed, or denied).
    Forbidden,
}

impl Decision {
    /// Whether the call may go ahead.
    pub fn is_allowed(self) -> bool {
        self == Decision::Allowed
    }
}
