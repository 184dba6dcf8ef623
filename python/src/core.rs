//! `rpcmux._native.Core`: one rpcmux server as Python drives it.
//!
//! The Python classes (`rpcmux.Server`, `rpcmux.server.SimpleXMLRPCServer`) keep what
//! the user registered and hand it here; `serve` builds a `VerbTable` from it and runs
//! the library's own `Server` (every limit, timeout, TLS, auth and metric of
//! `rpcmux serve`) with the GIL released until it stops. TCP addresses are bound when
//! the Core is made, as the standard library binds in its constructor, so
//! `server_address` knows the port 0 picked, and each `serve` serves the same sockets.

use crate::call::{Calls, Entry, Origin};
use crate::convert::{Marshal, To, Types};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rpcmux::config::Listen;
use rpcmux::{Config, EventHub, PassedListener, Server, VerbTable};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// How often a serving thread looks for a signal (Ctrl-C) Python has noted: Python
/// runs its handlers only when it gets the GIL back, so the loop must ask.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// One registered verb.
struct Registered {
    name: String,
    entry: Arc<Entry>,
    timeout: Option<f64>,
    help: String,
}

/// What a Core holds between serves.
struct State {
    config: Config,
    tcp: Vec<TcpListener>,
    verbs: Vec<Registered>,
    fallback: Option<Arc<Entry>>,
    /// Built-in verbs taken out (the drop-in answers introspection from Python).
    without: Vec<String>,
    call_timeout: Option<f64>,
    hub: Option<Arc<EventHub>>,
    serving: bool,
}

/// A server: its sockets, its verbs, and a switch to stop it.
#[pyclass(frozen, module = "rpcmux._native")]
pub struct Core {
    calls: Arc<Calls>,
    state: Mutex<State>,
    stop_requested: AtomicBool,
    stop: Notify,
}

impl Core {
    fn state(&self) -> PyResult<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| PyRuntimeError::new_err("rpcmux: server state poisoned"))
    }
}

/// The process's tokio runtime, made on first use: every Core serves on it.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rpcmux-worker")
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("rpcmux: no tokio runtime: {e}")))?;
    Ok(RT.get_or_init(|| rt))
}

/// Read `rpcmux.toml`-style settings from `path` (paths in it relative to it).
fn config_file(path: &str) -> PyResult<Config> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| PyValueError::new_err(format!("rpcmux: cannot read {path}: {e}")))?;
    let mut config = Config::from_toml(&text)
        .map_err(|e| PyValueError::new_err(format!("rpcmux: {path}: {e}")))?;
    if let Some(dir) = std::path::Path::new(path).parent() {
        config.paths_beside(dir);
    }
    Ok(config)
}

#[pymethods]
impl Core {
    /// Bind `listen` (`host:port`, `unix:/path`), with settings from `config` (a TOML
    /// file as `rpcmux serve --config` reads) and the keyword overrides.
    #[new]
    #[pyo3(signature = (listen, *, config=None, auth=None, tls_cert=None, tls_key=None,
        tls_client_ca=None, workers=1, allow_none=false, use_builtin_types=false,
        call_timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        listen: Vec<String>,
        config: Option<String>,
        auth: Option<String>,
        tls_cert: Option<String>,
        tls_key: Option<String>,
        tls_client_ca: Option<String>,
        workers: usize,
        allow_none: bool,
        use_builtin_types: bool,
        call_timeout: Option<f64>,
    ) -> PyResult<Core> {
        if workers == 0 {
            return Err(PyValueError::new_err("workers must be at least 1"));
        }
        if let Some(t) = call_timeout {
            if !(t.is_finite() && t > 0.0) {
                return Err(PyValueError::new_err(
                    "call_timeout must be a positive number of seconds",
                ));
            }
        }
        let mut cfg = match &config {
            Some(path) => config_file(path)?,
            None => Config::default(),
        };
        if !listen.is_empty() || config.is_none() {
            cfg.listen = Config::resolve_listen(&listen).map_err(PyErr::from)?;
        }
        if auth.is_some() {
            cfg.auth.file = auth.map(Into::into);
        }
        if tls_cert.is_some() || tls_key.is_some() {
            cfg.tls.cert = tls_cert.map(Into::into);
            cfg.tls.key = tls_key.map(Into::into);
        }
        if tls_client_ca.is_some() {
            cfg.tls.client_ca = tls_client_ca.map(Into::into);
        }
        // TCP now (the standard library binds in its constructor); socket files when
        // serving, by the library, which owns their mode and owner.
        let mut tcp = Vec::new();
        let mut rest = Vec::new();
        for l in std::mem::take(&mut cfg.listen) {
            match l {
                Listen::Tcp(addr) => tcp.push(py.detach(|| TcpListener::bind(addr))?),
                other => rest.push(other),
            }
        }
        cfg.listen = rest;
        let calls = Calls {
            types: Types::import(py)?,
            marshal: Marshal {
                allow_none,
                builtin_types: use_builtin_types,
            },
            pool: crate::pool::Pool::new(workers)?,
            submit: Mutex::new(None),
            done: Default::default(),
            answered: Notify::new(),
        };
        Ok(Core {
            calls: Arc::new(calls),
            state: Mutex::new(State {
                config: cfg,
                tcp,
                verbs: Vec::new(),
                fallback: None,
                without: Vec::new(),
                call_timeout,
                hub: None,
                serving: false,
            }),
            stop_requested: AtomicBool::new(false),
            stop: Notify::new(),
        })
    }

    /// The bound TCP addresses, `(host, port)` each.
    fn addresses(&self) -> PyResult<Vec<(String, u16)>> {
        let st = self.state()?;
        st.tcp
            .iter()
            .map(|l| {
                let a = l.local_addr()?;
                Ok((a.ip().to_string(), a.port()))
            })
            .collect()
    }

    /// Register `func` as verb `name` (replacing one of that name).
    #[pyo3(signature = (name, func, *, is_async=false, dispatcher=false, timeout=None, help=String::new()))]
    fn add(
        &self,
        name: String,
        func: Py<PyAny>,
        is_async: bool,
        dispatcher: bool,
        timeout: Option<f64>,
        help: String,
    ) -> PyResult<()> {
        let entry = Arc::new(Entry {
            func,
            is_async,
            dispatcher,
        });
        let mut st = self.state()?;
        st.verbs.retain(|r| r.name != name);
        st.verbs.push(Registered {
            name,
            entry,
            timeout,
            help,
        });
        Ok(())
    }

    /// Let `dispatcher` answer every name no verb has (or none, with `None`).
    fn set_fallback(&self, dispatcher: Option<Py<PyAny>>) -> PyResult<()> {
        self.state()?.fallback = dispatcher.map(|func| {
            Arc::new(Entry {
                func,
                is_async: false,
                dispatcher: true,
            })
        });
        Ok(())
    }

    /// Serve without these built-in verbs (names Python answers itself, or not at all).
    fn without_builtins(&self, names: Vec<String>) -> PyResult<()> {
        self.state()?.without = names;
        Ok(())
    }

    /// `submit(coroutine, done)`: how `async def` verbs reach the asyncio loop.
    fn set_submit(&self, submit: Option<Py<PyAny>>) -> PyResult<()> {
        *self
            .calls
            .submit
            .lock()
            .map_err(|_| PyRuntimeError::new_err("rpcmux: poisoned"))? = submit;
        Ok(())
    }

    /// Serve until `shutdown()`, a signal (KeyboardInterrupt raised here), `calls`
    /// calls answered, or `timeout` seconds passed; then drain as `rpcmux serve` does.
    #[pyo3(signature = (*, calls=None, timeout=None))]
    fn serve(&self, py: Python<'_>, calls: Option<u64>, timeout: Option<f64>) -> PyResult<()> {
        let (config, verbs, passed) = {
            let mut st = self.state()?;
            if st.serving {
                return Err(PyRuntimeError::new_err("the server is serving already"));
            }
            if st.tcp.is_empty() && st.config.listen.is_empty() {
                return Err(PyRuntimeError::new_err("the server is closed"));
            }
            let verbs = self.table(&st)?;
            let passed = st
                .tcp
                .iter()
                .map(|l| l.try_clone().map(PassedListener::from))
                .collect::<std::io::Result<Vec<_>>>()?;
            st.serving = true;
            (st.config.clone(), verbs, passed)
        };
        let rt = runtime()?;
        let start_done = self.calls.done.load(Ordering::Acquire);
        let deadline = timeout.map(Duration::from_secs_f64);
        let result = py.detach(|| {
            rt.block_on(async {
                let server = Server::from_listeners(config, verbs, passed).await?;
                if let Ok(mut st) = self.state.lock() {
                    st.hub = Some(server.events());
                }
                let mut interrupted = None;
                server
                    .run(self.until_stopped(start_done, calls, deadline, &mut interrupted))
                    .await;
                Ok::<_, std::io::Error>(interrupted)
            })
        });
        if let Ok(mut st) = self.state.lock() {
            st.serving = false;
        }
        self.stop_requested.store(false, Ordering::Release);
        match result {
            Ok(Some(err)) => Err(err),
            Ok(None) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Ask `serve` to stop (it drains, then returns).
    fn shutdown(&self) {
        self.stop_requested.store(true, Ordering::Release);
        self.stop.notify_waiters();
    }

    /// Close the TCP sockets (`server_close`).
    fn close(&self) -> PyResult<()> {
        let mut st = self.state()?;
        st.tcp.clear();
        st.config.listen.clear();
        Ok(())
    }

    /// Publish event `name` with `params` (a dict) to the subscribers on every
    /// protocol; how many connections it was queued for (0 before the first serve).
    fn publish(&self, py: Python<'_>, name: &str, params: &Bound<'_, PyAny>) -> PyResult<usize> {
        if !params.is_instance_of::<PyDict>() {
            return Err(PyTypeError::new_err("event params must be a dict"));
        }
        let to = To {
            marshal: Marshal {
                allow_none: true,
                builtin_types: true,
            },
            types: &self.calls.types,
            xml: false,
        };
        let rpcmux::Value::Struct(map) = to.value(params)? else {
            return Err(PyTypeError::new_err("event params must be a dict"));
        };
        let hub = self.state()?.hub.clone();
        Ok(match hub {
            Some(hub) => py.detach(|| hub.publish(name, *map)),
            None => 0,
        })
    }

    /// Calls answered so far (all serves).
    fn calls_answered(&self) -> u64 {
        self.calls.done.load(Ordering::Acquire)
    }
}

impl Core {
    /// The verb table for one serve.
    fn table(&self, st: &State) -> PyResult<VerbTable> {
        let mut verbs = VerbTable::new();
        for name in &st.without {
            verbs.remove(name);
        }
        let err = |e: rpcmux::RegisterError| PyValueError::new_err(e.to_string());
        for r in &st.verbs {
            verbs.remove(&r.name);
            let mut b = verbs.verb(&r.name).help(&r.help);
            if let Some(t) = r.timeout.or(st.call_timeout) {
                b = b.timeout(Duration::from_secs_f64(t));
            }
            let (calls, entry, name) = (self.calls.clone(), r.entry.clone(), r.name.clone());
            b.passthrough(move |params, ctx| {
                let origin = Origin::of(&ctx);
                calls
                    .clone()
                    .run(entry.clone(), name.clone(), params, origin)
            })
            .map_err(err)?;
        }
        if let Some(entry) = &st.fallback {
            let mut b = verbs.verb("(python)");
            if let Some(t) = st.call_timeout {
                b = b.timeout(Duration::from_secs_f64(t));
            }
            let (calls, entry) = (self.calls.clone(), entry.clone());
            b.fallback(move |method, params, ctx| {
                let origin = Origin::of(&ctx);
                calls
                    .clone()
                    .run(entry.clone(), method.to_owned(), params, origin)
            })
            .map_err(err)?;
        }
        Ok(verbs)
    }

    /// Resolves when the server should stop; a signal's exception is left in
    /// `interrupted`.
    async fn until_stopped(
        &self,
        start_done: u64,
        calls: Option<u64>,
        deadline: Option<Duration>,
        interrupted: &mut Option<PyErr>,
    ) {
        let until = deadline.map(|d| tokio::time::Instant::now() + d);
        loop {
            let stop = self.stop.notified();
            let answered = self.calls.answered.notified();
            if self.stop_requested.load(Ordering::Acquire) {
                return;
            }
            if let Some(n) = calls {
                if self.calls.done.load(Ordering::Acquire) >= start_done + n {
                    return;
                }
            }
            if until.is_some_and(|u| tokio::time::Instant::now() >= u) {
                return;
            }
            tokio::select! {
                _ = stop => {}
                _ = answered => {}
                _ = tokio::time::sleep(SIGNAL_POLL) => {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        *interrupted = Some(e);
                        return;
                    }
                }
            }
        }
    }
}
