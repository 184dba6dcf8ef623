//! A parsed XML-RPC call.

use rpcmux_value::Value;

/// A parsed `<methodCall>`.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodCall {
    /// `<methodName>`.
    pub method: String,
    /// `<params>`, in order (XML-RPC has no named parameters).
    pub params: Vec<Value>,
}
