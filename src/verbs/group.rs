//! Where several calls of a verb can go in one request: a forwarded verb's upstream
//! that has `system.multicall` (see `batch.rs`).

use futures_util::future::BoxFuture;
use rpcmux_value::{Params, RpcError, Value};
use std::net::SocketAddr;
use std::sync::Arc;

/// Something that runs several calls in one request (the gateway's upstream).
pub(crate) trait BatchTarget: Send + Sync {
    /// Whether it can right now (the upstream listed `system.multicall` when its verbs
    /// were last learned).
    fn groups(&self) -> bool;

    /// Run `calls` (each its name on the target and its parameters) for a caller at
    /// `peer`; one result per call, in order.
    fn call_many(
        &self,
        calls: Vec<(Arc<str>, Params)>,
        peer: Option<SocketAddr>,
    ) -> BoxFuture<'static, Vec<Result<Value, RpcError>>>;
}

/// A verb's place in batches: its target and its name there.
#[derive(Clone)]
pub(crate) struct Group {
    pub target: Arc<dyn BatchTarget>,
    pub name: Arc<str>,
}

impl Group {
    /// Whether both go to the same target (one request may carry both).
    pub(crate) fn same_target(&self, other: &Group) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.target), Arc::as_ptr(&other.target))
    }
}
