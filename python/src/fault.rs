//! A Python exception as the fault a caller gets.
//!
//! As the standard library's `SimpleXMLRPCDispatcher._marshaled_dispatch` answers: an
//! `xmlrpc.client.Fault` keeps its code and string (on every protocol: JSON-RPC's
//! error `code` and `message`, msgpack-rpc's error, STOMP's), anything else becomes
//! fault 1 with `"%s:%s" % (type(exc), exc)`, e.g. `<class 'ValueError'>:bad`.

use crate::convert::Types;
use pyo3::prelude::*;
use rpcmux::RpcError;

/// The fault `err` answers as.
pub fn fault_of(py: Python<'_>, err: PyErr, types: &Types) -> RpcError {
    let exc = err.value(py);
    if exc.is_instance(types.fault.bind(py)).unwrap_or(false) {
        let code = exc
            .getattr("faultCode")
            .and_then(|c| c.extract::<i64>())
            .unwrap_or(1);
        let text = exc
            .getattr("faultString")
            .and_then(|s| s.str().map(|s| s.to_string()))
            .unwrap_or_default();
        return RpcError::new(code, text);
    }
    let kind = exc
        .get_type()
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "<class '?'>".into());
    // str(exc) may itself raise; the standard library would then fail to answer at
    // all, here the fault says so.
    let text = exc
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "<exception str() failed>".into());
    RpcError::new(1, format!("{kind}:{text}"))
}
