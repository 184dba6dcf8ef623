//! The one error shape: every protocol maps it into its own error form.

use crate::Value;
use std::fmt;

/// An error as a verb or a framer reports it. Codes follow JSON-RPC 2.0 where one fits;
/// domain errors (say "no such VM") use their own positive codes, as VDSM does.
#[derive(Debug, Clone, PartialEq)]
///
/// ```
/// use rpcmux_value::RpcError;
/// let e = RpcError::new(1, "Virtual machine does not exist");
/// assert_eq!(e.to_string(), "Virtual machine does not exist (code 1)");
/// ```
pub struct RpcError {
    /// JSON-RPC error code, XML-RPC `faultCode`.
    pub code: i64,
    /// Human-readable text, XML-RPC `faultString`.
    pub message: String,
    /// Boxed: errors are rare, and this keeps `Result<Value, RpcError>` small.
    pub data: Option<Box<Value>>,
}

impl RpcError {
    /// The request is not well-formed in its protocol.
    pub const PARSE_ERROR: i64 = -32700;
    /// Well-formed, but not a request (no method, a bad id, ...).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No verb by that name.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Too many, unknown, missing or mistyped parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed (a verb panicked, a reply could not be encoded).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Server overloaded or shutting down (JSON-RPC's implementation-defined range).
    pub const SERVER_BUSY: i64 = -32000;

    /// An error with this code and message; a verb's domain errors use their own codes.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attach structured detail (JSON-RPC `data`; XML-RPC has no place for it).
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(Box::new(data));
        self
    }

    /// -32700, "Parse error: ...".
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(Self::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// -32600, "Invalid request: ...".
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(Self::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    /// -32601, naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            Self::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602, "Invalid params: ...".
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(Self::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

    /// -32603, "Internal error: ...".
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(Self::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}
