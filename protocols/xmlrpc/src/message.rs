//! A parsed XML-RPC call.

use rpcmux_value::{Str, Value};

/// A parsed `<methodCall>`.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodCall {
    /// `<methodName>` (inline up to 24 bytes).
    pub method: Str,
    /// `<params>`, in order (XML-RPC has no named parameters).
    pub params: Vec<Value>,
}
