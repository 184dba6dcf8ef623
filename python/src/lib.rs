//! `rpcmux._native`: the extension module behind the `rpcmux` Python package
//! (python/rpcmux, docs/python.md).
//!
//! Python functions become verbs of rpcmux's one verb table (a passthrough per name,
//! and a fallback for the names an instance resolves when called), served by the
//! library's `Server`: a Python program gets every protocol, limit and guarantee of
//! `rpcmux serve`, not a second server. The modules: `core` (a server as Python drives
//! it), `call` (the GIL only inside the call), `convert` (marshalling as
//! `xmlrpc.client` does it), `fault` (an exception as the fault the standard library
//! sends), `pool` (the threads plain functions run on).

mod call;
mod convert;
mod core;
mod fault;
mod pool;

use pyo3::prelude::*;

/// The module: one class, `Core`; the Python package builds its API on it.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<core::Core>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
