//! A reference XML-RPC reader on quick-xml, the oracle of the `xmlrpc_oracle` target:
//! quick-xml does the XML, `tokens.rs` adds the XML rules quick-xml leaves to its
//! caller, `grammar.rs` is XML-RPC's grammar written out plainly. It shares no code
//! with rpcmux's reader but `DateTime::parse` (see `scalar.rs`).
mod grammar;
mod scalar;
mod tag;
mod tokens;

pub use grammar::MAX_DEPTH;
pub use tokens::is_xml_char;

use rpcmux_value::{RpcError, Value};

/// A `<methodCall>`: the method name and params, or why the reference refuses it.
pub fn parse_call(body: &[u8]) -> Result<(String, Vec<Value>), String> {
    grammar::Grammar::new(tokens::tokens(body)?).call()
}

/// A body read both ways, as a call and as a response, tokenised once.
#[allow(clippy::type_complexity)]
pub fn parse_both(
    body: &[u8],
) -> (
    Result<(String, Vec<Value>), String>,
    Result<Result<Value, RpcError>, String>,
) {
    match tokens::tokens(body) {
        Ok(toks) => (
            grammar::Grammar::new(toks.clone()).call(),
            grammar::Grammar::new(toks).response(),
        ),
        Err(e) => (Err(e.clone()), Err(e)),
    }
}

/// A `<methodResponse>`: the result or fault, or why the reference refuses it.
pub fn parse_response(body: &[u8]) -> Result<Result<Value, RpcError>, String> {
    grammar::Grammar::new(tokens::tokens(body)?).response()
}
