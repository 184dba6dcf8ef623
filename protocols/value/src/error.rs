//! The one error shape: every protocol maps it into its own error form.

use crate::Value;
use std::fmt;

/// An error as a verb or a framer reports it. Codes follow JSON-RPC 2.0 where one fits;
/// domain errors (say "no such VM") use their own positive codes, as VDSM does.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// Boxed: errors are rare, and this keeps `Result<Value, RpcError>` small.
    pub data: Option<Box<Value>>,
}

impl RpcError {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Server overloaded or shutting down (JSON-RPC's implementation-defined range).
    pub const SERVER_BUSY: i64 = -32000;

    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(Box::new(data));
        self
    }

    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(Self::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(Self::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            Self::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(Self::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

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
