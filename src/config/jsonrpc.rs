//! The `[jsonrpc]` section of the config file: how JSON-RPC 1.0 errors are written.
//!
//! JSON-RPC 1.0 leaves the shape of `error` open, and its clients split in two camps
//! that cannot both be served by one shape: Go's `net/rpc/jsonrpc` (the most widely
//! deployed 1.0 implementation) reads `error` as a string and shuts its connection
//! down, failing every call in flight, on anything else; bitcoind's clients
//! (python-bitcoinrpc, jsonrpclib-pelix) read an object with `code` and `message`.
//! No 1.0 request says which camp sent it, but its transport does: Go's codec speaks
//! over a raw byte stream (`jsonrpc.NewClient(conn)`), and the object camp over HTTP
//! (bitcoind serves nothing else). So by default (`auto`) a 1.0 error is text on raw
//! TCP and an object over HTTP and WebSocket; `object` or `string` sets one shape for
//! every transport. JSON-RPC 2.0 requests always get 2.0's object.

use serde::Deserialize;

/// The `[jsonrpc]` settings.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct JsonrpcConfig {
    /// The shape of a JSON-RPC 1.0 error (`v1_error`).
    pub v1_error: V1Error,
}

/// How a JSON-RPC 1.0 request's error is written.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum V1Error {
    /// Text on raw TCP (Go's `net/rpc/jsonrpc`), an object elsewhere.
    #[default]
    Auto,
    /// `{"code":…,"message":…}` everywhere (bitcoind's shape).
    Object,
    /// `"message (code N)"` everywhere (Go's shape).
    String,
}

impl V1Error {
    /// Whether a 1.0 error on `protocol` (a [`CallContext::protocol`] name) is text.
    ///
    /// [`CallContext::protocol`]: crate::CallContext::protocol
    pub fn is_text_on(self, protocol: &str) -> bool {
        match self {
            V1Error::Auto => protocol == "jsonrpc-tcp",
            V1Error::Object => false,
            V1Error::String => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_follows_the_transport_unless_told() {
        let c: JsonrpcConfig = toml::from_str("").unwrap();
        assert!(c.v1_error.is_text_on("jsonrpc-tcp"));
        assert!(!c.v1_error.is_text_on("jsonrpc-http"));
        assert!(!c.v1_error.is_text_on("jsonrpc-ws"));
        let c: JsonrpcConfig = toml::from_str("v1_error = \"object\"\n").unwrap();
        assert!(!c.v1_error.is_text_on("jsonrpc-tcp"));
        let c: JsonrpcConfig = toml::from_str("v1_error = \"string\"\n").unwrap();
        assert!(c.v1_error.is_text_on("jsonrpc-http"));
        assert!(toml::from_str::<JsonrpcConfig>("v1_error = \"text\"\n").is_err());
        assert!(toml::from_str::<JsonrpcConfig>("v1_errors = \"auto\"\n").is_err());
    }
}
