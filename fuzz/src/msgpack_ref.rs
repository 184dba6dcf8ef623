//! rmpv's value tree → rpcmux's [`Value`], by the mapping rpcmux documents for msgpack
//! (crate docs of `rpcmux-msgpack-rpc`, "Types"): the oracle of `msgpack_value_oracle`.
//! rmpv does the msgpack; this file only maps types, written from the docs and the
//! msgpack spec (the timestamp extension), not from rpcmux's reader.
use rmpv::Value as Mp;
use rpcmux_value::{DateTime, Map, Value};
use serde::Deserialize as _;

/// One value from the start of `buf` through rmpv: the value and the bytes it took, or
/// why the reference refuses it. `max_depth` containers may nest.
///
/// rmpv reads the reserved byte 0xc1 as nil; the msgpack spec says it is never used,
/// and rmp-serde refuses it. So the same bytes must also pass rmp-serde's walk
/// (`IgnoredAny`), which refuses 0xc1 and agrees with rmpv on everything else.
pub fn read(buf: &[u8], max_depth: usize) -> Result<(Value, usize), String> {
    let mut rest = buf;
    let mp = rmpv::decode::read_value(&mut rest).map_err(|e| e.to_string())?;
    let n = buf.len() - rest.len();
    let mut de = rmp_serde::Deserializer::new(&buf[..n]);
    serde::de::IgnoredAny::deserialize(&mut de).map_err(|e| format!("rmp-serde: {e}"))?;
    let v = convert(&mp, max_depth)?;
    Ok((v, n))
}

fn convert(mp: &Mp, depth: usize) -> Result<Value, String> {
    Ok(match mp {
        Mp::Nil => Value::Nil,
        Mp::Boolean(b) => Value::Bool(*b),
        Mp::Integer(i) => match (i.as_i64(), i.as_u64()) {
            (Some(i), _) => Value::Int(i),
            // Above i64::MAX the model has no int: the nearest double.
            (None, Some(u)) => Value::Double(u as f64),
            (None, None) => unreachable!("an rmpv int is an i64 or a u64"),
        },
        Mp::F32(f) => Value::Double(f64::from(*f)),
        Mp::F64(f) => Value::Double(*f),
        // A str that is not UTF-8 is bytes (old-spec raw).
        Mp::String(s) => match s.as_str() {
            Some(s) => Value::from(s.to_owned()),
            None => Value::Bytes(s.as_bytes().to_vec()),
        },
        Mp::Binary(b) => Value::Bytes(b.clone()),
        Mp::Array(items) => {
            let depth = depth.checked_sub(1).ok_or("nested too deep")?;
            let items = items.iter().map(|v| convert(v, depth));
            Value::Array(items.collect::<Result<_, _>>()?)
        }
        Mp::Map(entries) => {
            let depth = depth.checked_sub(1).ok_or("nested too deep")?;
            let mut m = Map::new();
            for (k, v) in entries {
                // A repeated key keeps its first place and takes the last value.
                m.insert(key(k)?, convert(v, depth)?);
            }
            Value::Struct(Box::new(m))
        }
        Mp::Ext(-1, data) => Value::DateTime(timestamp(data)?),
        Mp::Ext(ty, _) => return Err(format!("extension type {ty}")),
    })
}

/// Keys: UTF-8 str or bin; ints in decimal, bools as `true` / `false`.
fn key(k: &Mp) -> Result<String, String> {
    match k {
        Mp::String(s) => s
            .as_str()
            .map(str::to_owned)
            .ok_or("a non-UTF-8 key".into()),
        Mp::Binary(b) => String::from_utf8(b.clone()).map_err(|_| "a non-UTF-8 key".into()),
        Mp::Integer(i) => Ok(i.to_string()),
        Mp::Boolean(b) => Ok(b.to_string()),
        other => Err(format!("a key {other:?}")),
    }
}

/// The timestamp extension as the msgpack spec defines it (4, 8 or 12 bytes, big-endian;
/// nanoseconds below 10^9), as an instant chrono can hold.
fn timestamp(d: &[u8]) -> Result<DateTime, String> {
    let be = |b: &[u8]| b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
    let (secs, nanos) = match d.len() {
        4 => (be(d) as i64, 0),
        8 => ((be(d) & ((1 << 34) - 1)) as i64, (be(d) >> 34) as u32),
        12 => (be(&d[4..]) as i64, be(&d[..4]) as u32),
        n => return Err(format!("a timestamp of {n} bytes")),
    };
    if nanos >= 1_000_000_000 {
        return Err("timestamp nanoseconds out of range".into());
    }
    DateTime::from_unix(secs, nanos).ok_or("timestamp out of range".into())
}
