//! The one verb table every protocol calls.
//!
//! A verb is registered once, either typed (its parameters a Rust type that derives
//! `Deserialize` and `JsonSchema`, its result any `Serialize` type) or dynamic (its
//! parameters declared by name, read as [`rpcmux_value::Value`]s). Positional and
//! named parameters both map onto the declared names; errors come back as
//! [`rpcmux_value::RpcError`] for each framer to put into its own protocol's shape.

mod args;
mod batch;
mod context;
mod extra;
mod introspect;
mod multicall;
mod observed;
mod openrpc;
mod output;
mod params_de;
mod policy;
mod schema;
mod subscriptions;
mod table;
mod typed;

pub use args::Args;
pub(crate) use batch::{plan, Run};
#[cfg(feature = "gateway")]
pub(crate) use batch::{BatchTarget, Group};
pub(crate) use context::Abort;
pub use context::CallContext;
#[cfg(feature = "gateway")]
pub(crate) use extra::{Extra, VerbSet};
pub(crate) use observed::{Call, Observer, StatsCache};
pub use output::{Encode, Output};
pub use policy::WhenBusy;
pub(crate) use table::{Dispatched, Found};
pub use table::{ParamSpec, Verb, VerbBuilder, VerbTable};
pub(crate) use typed::Input;
