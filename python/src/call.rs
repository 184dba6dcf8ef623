//! Calling a Python function for a verb: the GIL only inside the call.
//!
//! A call's parameters are decoded, and its answer encoded, by rpcmux on tokio's workers
//! without the GIL; only the conversion to and from Python objects and the function
//! itself hold it. A plain function runs on one of the server's `workers` threads
//! (`pool.rs`), so slow functions cannot take the async workers; an `async def` is handed to the server's one asyncio loop and its
//! result comes back through a callback. A call past its deadline is answered by
//! rpcmux (-32004) while the Python function runs on, holding its worker slot, so the
//! pool's bound holds even for functions that never return.

use crate::convert::{From, Marshal, To, Types};
use crate::fault::fault_of;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rpcmux::{Params, RpcError, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, Notify};

/// How a registered function is called.
pub struct Entry {
    /// The Python callable.
    pub func: Py<PyAny>,
    /// An `async def`: run on the asyncio loop.
    pub is_async: bool,
    /// A dispatcher (the drop-in's `_dispatch_call`): called as
    /// `f(method, args, kwargs, peer, protocol)`; otherwise `f(*args, **kwargs)`.
    pub dispatcher: bool,
}

/// What every call of one server shares.
pub struct Calls {
    pub types: Types,
    pub marshal: Marshal,
    /// The threads plain functions run on.
    pub pool: crate::pool::Pool,
    /// `submit(func, args, kwargs, done)`: schedules an `async def` on the loop and
    /// returns its `concurrent.futures.Future` (python/rpcmux/_aio.py).
    pub submit: Mutex<Option<Py<PyAny>>>,
    /// Calls answered so far, and a wake-up per answer (`handle_request`).
    pub done: AtomicU64,
    pub answered: Notify,
}

/// The protocol-facing part of a call: which protocol, from whom.
#[derive(Clone)]
pub struct Origin {
    pub protocol: &'static str,
    pub peer: Option<SocketAddr>,
}

impl Origin {
    /// Where a call came from, as its context says.
    pub fn of(ctx: &rpcmux::CallContext) -> Origin {
        Origin {
            protocol: ctx.protocol,
            peer: ctx.peer,
        }
    }

    fn xml(&self) -> bool {
        self.protocol.starts_with("xmlrpc")
    }
}

impl Calls {
    /// Run `entry` for one call and answer its value or fault.
    pub async fn run(
        self: Arc<Self>,
        entry: Arc<Entry>,
        method: String,
        params: Params,
        origin: Origin,
    ) -> Result<Value, RpcError> {
        let r = match entry.is_async {
            false => self.clone().run_sync(entry, method, params, origin).await,
            true => self.clone().run_async(entry, method, params, origin).await,
        };
        self.done.fetch_add(1, Ordering::AcqRel);
        self.answered.notify_waiters();
        r
    }

    async fn run_sync(
        self: Arc<Self>,
        entry: Arc<Entry>,
        method: String,
        params: Params,
        origin: Origin,
    ) -> Result<Value, RpcError> {
        let (tx, rx) = oneshot::channel();
        let calls = self.clone();
        self.pool.submit(Box::new(move |py| {
            // Its caller gone (the deadline passed while it was queued): not run.
            if tx.is_closed() {
                return;
            }
            let answer = calls
                .start(py, &entry, &method, &params, &origin)
                .and_then(|r| calls.to_value(&r, &origin))
                .map_err(|e| fault_of(py, e, &calls.types));
            let _ = tx.send(answer);
        }));
        rx.await
            .unwrap_or_else(|_| Err(RpcError::internal("the Python worker stopped")))
    }

    async fn run_async(
        self: Arc<Self>,
        entry: Arc<Entry>,
        method: String,
        params: Params,
        origin: Origin,
    ) -> Result<Value, RpcError> {
        let (tx, rx) = oneshot::channel();
        let calls = self.clone();
        let o = origin.clone();
        // Converting the arguments and scheduling take the GIL, which a plain function
        // may hold for its switch interval: not on an async worker.
        let started = tokio::task::spawn_blocking(move || {
            Python::attach(|py| -> PyResult<Py<PyAny>> {
                let coro = calls.start(py, &entry, &method, &params, &o)?;
                let submit = calls
                    .submit
                    .lock()
                    .ok()
                    .and_then(|s| s.as_ref().map(|s| s.clone_ref(py)));
                let Some(submit) = submit else {
                    return Err(pyo3::exceptions::PyRuntimeError::new_err(
                        "async functions need the server's asyncio loop, which is not running",
                    ));
                };
                let done = Done {
                    tx: Mutex::new(Some(tx)),
                    calls: calls.clone(),
                    origin: o,
                };
                let fut = submit.bind(py).call1((coro, done))?;
                Ok(fut.unbind())
            })
            .map_err(|e| Python::attach(|py| fault_of(py, e, &calls.types)))
        })
        .await
        .unwrap_or_else(|e| Err(RpcError::internal(format!("the Python call failed: {e}"))))?;
        // Cancelled (the deadline, the caller gone): the coroutine is cancelled too.
        let cancel = CancelOnDrop(Some(started));
        let r = rx
            .await
            .unwrap_or_else(|_| Err(RpcError::internal("the async function was cancelled")));
        cancel.disarm();
        r
    }

    /// Call the function with the call's arguments: its result, or for an `async def`
    /// its coroutine.
    fn start<'py>(
        &self,
        py: Python<'py>,
        entry: &Entry,
        method: &str,
        params: &Params,
        origin: &Origin,
    ) -> PyResult<Bound<'py, PyAny>> {
        let from = From {
            marshal: self.marshal,
            types: &self.types,
        };
        let (args, kwargs) = match params {
            Params::Positional(v) => {
                let items = v
                    .iter()
                    .map(|x| from.object(py, x))
                    .collect::<PyResult<Vec<_>>>()?;
                (PyTuple::new(py, items)?, None)
            }
            Params::Named(m) => {
                let d = PyDict::new(py);
                for (k, v) in m.iter() {
                    d.set_item(&**k, from.object(py, v)?)?;
                }
                (PyTuple::empty(py), Some(d))
            }
        };
        let f = entry.func.bind(py);
        if entry.dispatcher {
            let peer = origin.peer.map(|p| (p.ip().to_string(), p.port()));
            return f.call1((method, args, kwargs, peer, origin.protocol));
        }
        f.call(args, kwargs.as_ref())
    }

    fn to_value(&self, r: &Bound<'_, PyAny>, origin: &Origin) -> PyResult<Value> {
        To {
            marshal: self.marshal,
            types: &self.types,
            xml: origin.xml(),
        }
        .value(r)
    }
}

/// The callback an `async def`'s future calls when it is done: converts its result
/// (the loop thread holds the GIL then) and hands it to the waiting call.
#[pyclass(frozen)]
struct Done {
    tx: Mutex<Option<oneshot::Sender<Result<Value, RpcError>>>>,
    calls: Arc<Calls>,
    origin: Origin,
}

#[pymethods]
impl Done {
    fn __call__(&self, py: Python<'_>, fut: &Bound<'_, PyAny>) {
        let answer = match fut.call_method0("cancelled").and_then(|c| c.is_truthy()) {
            Ok(true) => Err(RpcError::internal("the async function was cancelled")),
            _ => fut
                .call_method0("result")
                .and_then(|r| self.calls.to_value(&r, &self.origin))
                .map_err(|e| fault_of(py, e, &self.calls.types)),
        };
        if let Some(tx) = self.tx.lock().ok().and_then(|mut t| t.take()) {
            let _ = tx.send(answer);
        }
    }
}

/// Cancels an `async def`'s future when its call is dropped before it answered.
struct CancelOnDrop(Option<Py<PyAny>>);

impl CancelOnDrop {
    fn disarm(mut self) {
        if let Some(fut) = self.0.take() {
            // Dropping a Py without the GIL defers the decref to pyo3's pool.
            drop(fut);
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(fut) = self.0.take() {
            // Off the async worker: the GIL may be busy.
            tokio::task::spawn_blocking(move || {
                Python::attach(|py| {
                    let _ = fut.bind(py).call_method0("cancel");
                })
            });
        }
    }
}
