//! A random [`Value`] from fuzzer bytes, for the writer halves of the differential
//! targets: every variant, doubles from raw bits (NaN, ±0, subnormals, infinities),
//! any Unicode string, dateTimes across rpcmux's whole range, containers up to
//! `depth` deep.
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use rpcmux_value::{DateTime, Map, Value};

pub fn value(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let kinds = if depth == 0 { 7 } else { 9 };
    Ok(match u.choose_index(kinds)? {
        0 => Value::Nil,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Int(int(u)?),
        3 => Value::Double(f64::from_bits(u.arbitrary()?)),
        4 => Value::String(u.arbitrary::<String>()?.into()),
        5 => Value::Bytes(u.arbitrary()?),
        6 => Value::DateTime(datetime(u)?),
        7 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| value(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let mut m = Map::new();
            for _ in 0..u.int_in_range(0..=4)? {
                let k: String = u.arbitrary()?;
                m.insert(k, value(u, depth - 1)?);
            }
            Value::Struct(Box::new(m))
        }
    })
}

/// Small ints and the edges of every width, as often as arbitrary 64-bit ones.
fn int(u: &mut Unstructured<'_>) -> Result<i64> {
    const EDGES: [i64; 12] = [
        0,
        -1,
        127,
        -32,
        -33,
        255,
        65_535,
        i32::MAX as i64,
        i32::MIN as i64,
        u32::MAX as i64,
        i64::MAX,
        i64::MIN,
    ];
    Ok(match u.choose_index(3)? {
        0 => *u.choose(&EDGES)?,
        1 => i64::from(u.arbitrary::<i8>()?),
        _ => u.arbitrary()?,
    })
}

/// Any instant from year -262143 to 262142 (chrono's range), to the nanosecond.
fn datetime(u: &mut Unstructured<'_>) -> Result<DateTime> {
    const SECS: i64 = 8_210_266_876_799; // about chrono's NaiveDateTime::MAX in Unix seconds
    let secs = match u.choose_index(3)? {
        0 => u.int_in_range(0..=4_102_444_800)?,
        1 => u.int_in_range(-SECS..=SECS)?,
        _ => u.int_in_range(-1..=1)?,
    };
    let nanos = match u.choose_index(3)? {
        0 => 0,
        1 => u.int_in_range(0..=999)? * 1_000_000,
        _ => u.int_in_range(0..=999_999_999)?,
    };
    Ok(DateTime::from_unix(secs, nanos)
        .unwrap_or_else(|| DateTime::from_unix(0, 0).expect("the epoch")))
}
