//! The policy in force, and verifying credentials against it.

use crate::{Credentials, Decision, Failure, Policy, PolicyError, Principal};
use futures_util::future::BoxFuture;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

/// An embedder's own user store (LDAP, a database): asked before the credentials
/// file. `Ok(Some(name))`: verified, the principal is `name` (its permissions are the
/// file's user of that name, if any, plus `anonymous`); `Ok(None)`: not one of mine,
/// try the file; `Err(())`: rejected.
pub trait Authenticate: Send + Sync + 'static {
    /// Verify `credentials` presented from `source`. May block or take long: it runs
    /// off the async workers' fast path, a bounded number at once.
    fn authenticate(
        &self,
        credentials: &Credentials,
        source: IpAddr,
    ) -> BoxFuture<'static, Result<Option<String>, ()>>;
}

/// The policy in force (swapped whole on [`Auth::reload`]) and the machinery that
/// verifies credentials: a bounded pool of password verifications, a keyed-digest cache
/// of recent successes, and the failed-attempt throttle.
pub struct Auth {
    // Filled in by the implementation.
}

impl Auth {
    /// An `Auth` enforcing `policy`.
    pub fn new(policy: Policy) -> Self {
        todo!()
    }

    /// An `Auth` enforcing the credentials file at `path` (reloaded from the same path
    /// by [`Auth::reload`]).
    pub fn from_file(path: &Path) -> Result<Self, PolicyError> {
        todo!()
    }

    /// Also ask `authenticator` (before the file) for every password or token.
    pub fn with_authenticator(self, authenticator: Arc<dyn Authenticate>) -> Self {
        todo!()
    }

    /// Read the credentials file again and put it in force; on error the old policy
    /// stays. Principals already bound keep their names; their permissions are the new
    /// file's from the next call on. Remembered credentials are forgotten.
    pub fn reload(&self) -> Result<(), PolicyError> {
        todo!()
    }

    /// The policy in force now.
    pub fn policy(&self) -> Arc<Policy> {
        todo!()
    }

    /// Verify `credentials` from `source`: throttled first (nothing verified while a
    /// source or user is throttled), then a recent success remembered by keyed digest,
    /// then the embedder's authenticator, then the file (passwords on the blocking
    /// pool, at most one per core at once, a bounded queue: [`Failure::Busy`] past it).
    pub async fn login(
        &self,
        credentials: &Credentials,
        source: IpAddr,
    ) -> Result<Principal, Failure> {
        todo!()
    }

    /// The principal a verified certificate name makes (a user of the file with no
    /// password, e.g. `[users.engine]`; any other name too, with only the anonymous
    /// permissions).
    pub fn certificate(&self, name: &str) -> Principal {
        todo!()
    }

    /// May `who` (`None`: no credentials) call `verb` (its registered name)?
    /// Deny wins over allow; an authenticated caller may also call what `anonymous`
    /// may. Cheap: asked before every call.
    pub fn allows(&self, who: Option<&Principal>, verb: &str) -> Decision {
        todo!()
    }

    /// May `who` receive the event named `event`? Asked per subscriber per event.
    pub fn sees(&self, who: Option<&Principal>, event: &str) -> bool {
        todo!()
    }

    /// Whether the policy checks tokens at all (`[jwt]`): a server says `Bearer` in
    /// `WWW-Authenticate` only then.
    pub fn accepts_tokens(&self) -> bool {
        todo!()
    }
}
