//! The one verb table every protocol calls.
//!
//! A verb is registered once, either typed (its parameters a Rust type that derives
//! `Deserialize` and `JsonSchema`, its result any `Serialize` type) or dynamic (its
//! parameters declared by name, read as [`rpcmux_value::Value`]s). Positional and
//! named parameters both map onto the declared names; errors come back as
//! [`rpcmux_value::RpcError`] for each framer to put into its own protocol's shape.

mod access;
mod args;
mod batch;
mod builder;
mod builtins;
mod context;
mod dispatch;
mod dispatched;
mod fallback;
mod group;
mod introspect;
mod login;
mod multicall;
mod names;
mod observed;
mod openrpc;
mod output;
mod params_de;
mod policy;
mod register_error;
mod schema;
mod subscriptions;
mod table;
mod typed;
mod upstream;
mod verb;

pub(crate) use access::refusal;
pub use args::Args;
pub(crate) use batch::{plan, Run};
pub use builder::VerbBuilder;
pub(crate) use context::Abort;
pub use context::CallContext;
pub(crate) use dispatched::Dispatched;
#[cfg(feature = "gateway")]
pub(crate) use group::{BatchTarget, Group};
pub(crate) use login::register_login;
pub(crate) use observed::{Call, Observer, StatsCache};
pub use output::{Encode, Output};
pub use policy::WhenBusy;
pub use register_error::RegisterError;
pub(crate) use table::Found;
pub(crate) use typed::Input;
#[cfg(feature = "gateway")]
pub(crate) use upstream::UpstreamVerbs;
#[cfg(feature = "gateway")]
pub(crate) use verb::VerbSet;
pub use verb::{ParamSpec, Verb, VerbTable};
