//! The one verb table every protocol calls.
//!
//! A verb is registered once with its parameter names and help; positional and
//! named parameters both map onto the declared names, errors come back as
//! [`RpcError`] for each framer to put into its own protocol's shape.

mod args;
mod context;
mod introspect;
mod multicall;
mod table;

pub use args::Args;
pub(crate) use context::Abort;
pub use context::{CallContext, Session};
pub use table::{ParamSpec, Verb, VerbBuilder, VerbTable, ERR_SHUTTING_DOWN};
