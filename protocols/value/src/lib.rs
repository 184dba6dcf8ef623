//! The one data model every rpcmux protocol speaks.
//!
//! A [`Value`] is what XML-RPC, JSON-RPC and MessagePack-RPC can all carry; an
//! [`RpcError`] is the one error shape that each protocol maps into its own
//! (XML-RPC fault, JSON-RPC error object, msgpack-rpc error field, STOMP ERROR).
//! Protocol crates depend only on this crate, so each stays usable on its own.
#![warn(missing_docs)]

mod datetime;
mod de;
mod error;
mod from;
mod gather;
mod map;
#[cfg(feature = "schemars")]
mod schema;
mod ser;
mod serde_impl;
mod str;
mod value;

pub use datetime::DateTime;
pub use de::{from_value, ValueError};
pub use error::RpcError;
pub use from::TypeMismatch;
pub use gather::Gather;
pub use ser::to_value;
/// Iterators over a [`Map`]'s members.
pub mod map_iter {
    pub use crate::map::{Iter, IterMut, Members};
}
pub use str::Str;
pub use value::{Map, Params, Value};
