//! A dispatched call: answered at once, or still running.

use crate::verbs::output::Output;
use futures_util::future::BoxFuture;
use rpcmux_value::RpcError;
use std::future::Future;

pub(crate) type Reply = BoxFuture<'static, Result<Output, RpcError>>;

/// A dispatched call: answered as it started (most are: an echo, a lookup), or still
/// running. Awaiting it gives the answer either way; a stream framer takes
/// [`Dispatched::now`] first, so a call answered at once costs no task and no box.
pub(crate) enum Dispatched {
    /// The answer (`None` once a poll took it).
    Ready(Option<Result<Output, RpcError>>),
    Running(Reply),
    /// Answered, and the answer already written by the framer as the call ran (a sync
    /// typed verb's result, see [`crate::verbs::typed::WriteNow`]): nothing to queue or box.
    Written,
}

impl Dispatched {
    /// The answer if the call has it already, or the call still running.
    pub(crate) fn now(self) -> Result<Result<Output, RpcError>, Reply> {
        match self {
            Dispatched::Ready(Some(r)) => Ok(r),
            Dispatched::Ready(None) | Dispatched::Written => Ok(Err(answered_twice())),
            Dispatched::Running(f) => Err(f),
        }
    }
}

impl Future for Dispatched {
    type Output = Result<Output, RpcError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut *self {
            Dispatched::Ready(r) => {
                std::task::Poll::Ready(r.take().unwrap_or_else(|| Err(answered_twice())))
            }
            Dispatched::Running(f) => f.as_mut().poll(cx),
            Dispatched::Written => std::task::Poll::Ready(Err(answered_twice())),
        }
    }
}

/// A [`Dispatched::Ready`] polled again after it answered (a bug of the caller's).
pub(crate) fn answered_twice() -> RpcError {
    RpcError::internal("call answered twice")
}
