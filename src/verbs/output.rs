//! What a verb answers: a `Value` tree (dynamic verbs), or a typed result that each
//! protocol serializes straight into its output (JSON, msgpack and XML-RPC with serde,
//! no tree; XML-RPC leaves a few rare forms to [`rpcmux_value::to_value`]).

use bytes::BytesMut;
use rpcmux_value::{RpcError, Value};
use serde::Serialize;

/// A verb's answer, before a protocol encodes it.
pub enum Output {
    /// From a dynamic verb.
    Value(Value),
    /// From a typed verb: any `serde::Serialize` result.
    Typed(Box<dyn Encode>),
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Value(v) => f.debug_tuple("Value").field(v).finish(),
            Output::Typed(_) => f.write_str("Typed(..)"),
        }
    }
}

impl Output {
    /// The answer as a tree. A typed result serde cannot express as a value (a map
    /// with non-string keys, an integer past 64 bits) is an internal error.
    pub fn into_value(self) -> Result<Value, RpcError> {
        match self {
            Output::Value(v) => Ok(v),
            Output::Typed(t) => t.to_value().map_err(cannot_encode),
        }
    }
}

impl From<Value> for Output {
    fn from(v: Value) -> Self {
        Output::Value(v)
    }
}

/// A typed result, encodable by every protocol. Implemented for every
/// `Serialize + Send` type; each method is monomorphized for its format.
pub trait Encode: Send {
    /// Append the result as JSON.
    fn to_json(&self, out: &mut Vec<u8>) -> Result<(), String>;
    /// Append the result as msgpack (structs as maps, as the dynamic path writes them).
    fn to_msgpack(&self, out: &mut BytesMut) -> Result<(), String>;
    /// The result as a value tree.
    fn to_value(&self) -> Result<Value, rpcmux_value::ValueError>;
    /// Append a whole XML-RPC `<methodResponse>` holding the result (the protocol has no
    /// bare value on the wire), or say why it cannot be written (-32603), `out` then as
    /// it was. By default through [`Encode::to_value`].
    fn to_xmlrpc_response(&self, out: &mut Vec<u8>) -> Result<(), RpcError> {
        let v = self.to_value().map_err(cannot_encode)?;
        rpcmux_xmlrpc::try_write_response(out, &v)
    }
}

impl<T: Serialize + Send> Encode for T {
    fn to_json(&self, out: &mut Vec<u8>) -> Result<(), String> {
        serde_json::to_writer(out, self).map_err(|e| e.to_string())
    }
    fn to_msgpack(&self, out: &mut BytesMut) -> Result<(), String> {
        rpcmux_msgpack_rpc::typed::write(out, self).map_err(|e| e.to_string())
    }
    fn to_value(&self) -> Result<Value, rpcmux_value::ValueError> {
        rpcmux_value::to_value(self)
    }
    /// Straight into the buffer, no tree, for the forms results nearly always take;
    /// the rest through the tree (see `rpcmux_xmlrpc::try_write_typed_response`).
    fn to_xmlrpc_response(&self, out: &mut Vec<u8>) -> Result<(), RpcError> {
        match rpcmux_xmlrpc::try_write_typed_response(out, self)? {
            rpcmux_xmlrpc::Written::Done => Ok(()),
            rpcmux_xmlrpc::Written::Fallback => {
                let v = self.to_value().map_err(cannot_encode)?;
                rpcmux_xmlrpc::try_write_response(out, &v)
            }
        }
    }
}

/// The error that replaces a result that could not be encoded.
pub(crate) fn cannot_encode(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format!("cannot encode the result: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Vm {
        id: &'static str,
        mem: Option<u32>,
        blob: serde_bytes_like::Blob,
    }

    mod serde_bytes_like {
        /// Bytes serialized as bytes (msgpack bin), as `serde_bytes` does.
        pub struct Blob(pub Vec<u8>);
        impl serde::Serialize for Blob {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    #[test]
    fn typed_results_encode_like_their_value_tree() {
        let vm = Vm {
            id: "a",
            mem: None,
            blob: serde_bytes_like::Blob(vec![1, 2]),
        };
        let tree = vm.to_value().unwrap();
        let mut direct = BytesMut::new();
        vm.to_msgpack(&mut direct).unwrap();
        let mut via_tree = BytesMut::new();
        rpcmux_msgpack_rpc::write_value(&mut via_tree, &tree).unwrap();
        assert_eq!(direct, via_tree, "msgpack: struct as map, bytes as bin");
        let mut json = Vec::new();
        vm.to_json(&mut json).unwrap();
        assert_eq!(json, br#"{"id":"a","mem":null,"blob":[1,2]}"#);
    }
}
