//! Who may call what: one policy for every protocol rpcmux speaks.
//!
//! A [`Policy`] is a credentials file (TOML, docs/auth.md): users with argon2id password
//! hashes, groups, verb-name globs to allow and deny, event-name globs a principal may
//! see, what an anonymous caller may call, and how to check JWTs. [`Auth`] holds the
//! policy (reloadable) and verifies [`Credentials`] into a [`Principal`]: off the async
//! workers, a bounded number at once, remembered briefly by a keyed digest, with failed
//! attempts throttled per source address and per user. The server asks
//! [`Auth::allows`] before every call and [`Auth::sees`] before every event.
//!
//! This crate knows no protocol and no socket: the server turns HTTP `Authorization`,
//! STOMP `login`/`passcode`, `rpc.login` and certificate names into these types.

mod auth;
mod cache;
mod credentials;
mod decision;
mod error;
mod glob;
mod jwt;
mod password;
mod policy;
mod pool;
mod principal;
mod throttle;

#[cfg(test)]
mod tests;

pub use auth::{Auth, Authenticate};
pub use credentials::{Credentials, Failure};
pub use decision::Decision;
pub use error::PolicyError;
pub use password::hash_password;
pub use policy::Policy;
pub use principal::{Principal, Via};
