//! Helpers shared by the fuzz targets (see docs/fuzzing.md).

use rpcmux_value::{Map, Params, RpcError, Value};

/// Structural equality where doubles compare by bit pattern, except that any NaN equals
/// any NaN (so `Value::Double(NaN)` round-trips, and `-0.0` must stay `-0.0`).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Value::Array(x), Value::Array(y)) => same_values(x, y),
        (Value::Struct(x), Value::Struct(y)) => same_map(x, y),
        _ => a == b,
    }
}

/// Struct members: the same names in the same order, with the same values.
pub fn same_map(x: &Map, y: &Map) -> bool {
    x.len() == y.len()
        && x.iter()
            .zip(y.iter())
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
}

pub fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

pub fn same_params(a: &Params, b: &Params) -> bool {
    match (a, b) {
        (Params::Positional(x), Params::Positional(y)) => same_values(x, y),
        (Params::Named(x), Params::Named(y)) => same_map(x, y),
        _ => false,
    }
}

pub fn same_error(a: &RpcError, b: &RpcError) -> bool {
    a.code == b.code
        && a.message == b.message
        && match (&a.data, &b.data) {
            (None, None) => true,
            (Some(x), Some(y)) => same_value(x, y),
            _ => false,
        }
}

/// A stream target's input: the first byte says how the stream is cut and which limits
/// apply; the rest is the stream.
///
/// - bits 0-2 (`k`): the next `k` bytes are chunk sizes (each `byte + 1`, cycled); with
///   `k == 0` the stream is fed one byte at a time (the harshest split);
/// - bit 3: use small limits, so every cap is reached by short inputs.
pub struct Chunked<'a> {
    pub small_limits: bool,
    pub sizes: Vec<usize>,
    pub stream: &'a [u8],
}

impl<'a> Chunked<'a> {
    pub fn new(data: &'a [u8]) -> Option<Self> {
        let (&head, rest) = data.split_first()?;
        let k = (head & 7) as usize;
        if rest.len() < k {
            return None;
        }
        let (sizes, stream) = rest.split_at(k);
        let sizes = if sizes.is_empty() {
            vec![1]
        } else {
            sizes.iter().map(|&b| b as usize + 1).collect()
        };
        Some(Chunked {
            small_limits: head & 8 != 0,
            sizes,
            stream,
        })
    }

    /// The stream cut into the chosen pieces.
    pub fn pieces(&self) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut rest = self.stream;
        let mut sizes = self.sizes.iter().cycle();
        while !rest.is_empty() {
            let n = (*sizes.next().unwrap()).min(rest.len());
            out.push(&rest[..n]);
            rest = &rest[n..];
        }
        out
    }
}

pub mod gen;
pub mod json_ref;
pub mod msgpack_ref;
pub mod typed_params;
pub mod xml_ref;
