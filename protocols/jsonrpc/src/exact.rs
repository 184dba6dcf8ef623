//! Numbers in `params` are taken exactly or refused, never silently changed.
//!
//! The data model's numbers are an i64 and a double. A JSON integer literal beyond the
//! i64 range (`18446744073709551615`, `123456789012345678901234567890`) becomes the
//! double that holds it exactly when there is one (`9223372036854775808` = 2^63), and is
//! otherwise refused with -32602 ("integer … is beyond the 64-bit signed range and no
//! double holds it exactly"). Literals with a fraction or an exponent (`1e2`, `0.1`,
//! `1.5e300`) are doubles by their spelling and read as the nearest double, exactly as
//! written by any shortest-round-trip writer (serde_json's `float_roundtrip` parser).
//!
//! serde_json hands an integer beyond u64 to the visitor as a double, indistinguishable
//! from a float literal. So the visitor here only notes a *doubt* (a u64 beyond i64 that
//! no double holds, or an integral double of magnitude 2^63 or more, which only such
//! literals and large float literals produce) and the text of `params` is then looked at
//! again ([`first_inexact_integer`]), which costs nothing for every other request.

use rpcmux_value::{Gather, Str, Value};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A value read from JSON, and whether it may hold an integer that was rounded.
pub(crate) struct Checked {
    pub(crate) value: Value,
    pub(crate) doubt: bool,
}

impl Checked {
    fn sure(value: Value) -> Self {
        Checked {
            value,
            doubt: false,
        }
    }
}

/// 2^63: integral doubles from here up can come from integer literals beyond i64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked::sure(Value::Nil))
    }
    fn visit_none<E>(self) -> Result<Checked, E> {
        Ok(Checked::sure(Value::Nil))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Checked, D::Error> {
        Checked::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Checked, E> {
        Ok(Checked::sure(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Checked, E> {
        Ok(Checked::sure(Value::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Checked, E> {
        if let Ok(i) = i64::try_from(v) {
            return Ok(Checked::sure(Value::Int(i)));
        }
        let d = v as f64;
        // `d as u64` saturates, so 2^64 (which u64::MAX rounds to) is ruled out first.
        let exact = d < 18_446_744_073_709_551_616.0 && d as u64 == v;
        Ok(Checked {
            value: Value::Double(d),
            doubt: !exact,
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Checked, E> {
        Ok(Checked {
            value: Value::Double(v),
            doubt: v.abs() >= TWO_63 && v.fract() == 0.0,
        })
    }
    fn visit_str<E>(self, v: &str) -> Result<Checked, E> {
        Ok(Checked::sure(Value::String(Str::new(v))))
    }
    fn visit_string<E>(self, v: String) -> Result<Checked, E> {
        Ok(Checked::sure(Value::String(Str::from(v))))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        // Cap the pre-allocation: a hostile size hint must not reserve gigabytes.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        let mut doubt = false;
        while let Some(c) = seq.next_element::<Checked>()? {
            doubt |= c.doubt;
            out.push(c.value);
        }
        Ok(Checked {
            value: Value::Array(out),
            doubt,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        // JSON does not say how many members an object has: gathered, then made into a
        // map of their number (`Gather`: no rehash per doubling, no growth once warm).
        let mut doubt = false;
        let mut members = Gather::new();
        while let Some(k) = map.next_key::<Str>()? {
            let c: Checked = map.next_value()?;
            doubt |= c.doubt;
            members.push(k, c.value);
        }
        Ok(Checked {
            value: Value::Struct(Box::new(members.into_map())),
            doubt,
        })
    }
}

/// The first integer literal in the JSON text `json` (already known to be valid JSON)
/// that is beyond the i64 range and that no double holds exactly.
pub(crate) fn first_inexact_integer(json: &str) -> Option<&str> {
    let b = json.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // Skip the string: to the next quote not escaped.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &json[start..i];
                if !token.contains(['.', 'e', 'E']) && !integer_is_exact(token) {
                    return Some(token);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether the integer literal `token` is an i64, or is exactly some double.
fn integer_is_exact(token: &str) -> bool {
    if token.parse::<i64>().is_ok() {
        return true;
    }
    // Rust's float parsing is correctly rounded, and `{:.0}` prints a double's exact
    // integer value: equal texts mean the double is the literal. (JSON integers have
    // no leading zeros or `+`, so the spellings compare directly.)
    match token.parse::<f64>() {
        Ok(d) if d.is_finite() => format!("{d:.0}") == token,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_integer_literals_no_double_holds() {
        assert_eq!(first_inexact_integer("[1,-2,9223372036854775807]"), None);
        assert_eq!(first_inexact_integer("[-9223372036854775808]"), None);
        // 2^63 and 2^64 - 2^11 are doubles exactly; 2^64 too, and 2^70.
        let exact = "[9223372036854775808,18446744073709549568,18446744073709551616,1180591620717411303424]";
        assert_eq!(first_inexact_integer(exact), None);
        assert_eq!(
            first_inexact_integer(
                r#"{"a":"18446744073709551615","b":[1e30,1.0,18446744073709551615]}"#
            ),
            Some("18446744073709551615")
        );
        assert_eq!(
            first_inexact_integer(r#"["\"", -9223372036854775809]"#),
            Some("-9223372036854775809")
        );
        assert_eq!(
            first_inexact_integer("[123456789012345678901234567890]"),
            Some("123456789012345678901234567890")
        );
        // Float spellings are doubles by choice, not rounded integers.
        assert_eq!(
            first_inexact_integer("[1.5e300,123456789012345678901234567890.0,1e19]"),
            None
        );
    }
}
