//! A connection's state and its share of the process's resources: who it is
//! ([`ConnInfo`]), the refusal counters, the per-address caps, and the budgets its
//! requests and replies are charged to. A leaf: front layers, framers and the server
//! all read it, and it imports none of them.

pub(crate) mod budget;
mod caller;
mod info;
pub(crate) mod out;
mod peer;
pub(crate) mod per_ip;
pub mod refusals;
pub mod reply_cap;
pub(crate) mod turns;

pub use caller::Caller;
pub(crate) use info::{ConnInfo, Stage};
pub(crate) use peer::Peer;
pub use peer::PeerCred;
