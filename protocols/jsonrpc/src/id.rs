//! The request id: a string, a number or null. Kept as sent, so it echoes back byte-exact.
//!
//! JSON-RPC 2.0 says the reply's id is the request's id. A number is therefore kept as
//! the exact text the client wrote ([`IdNumber`]): `1e2` comes back `1e2` (not `100.0`),
//! `-0` stays `-0`, `1.50` keeps its zero, and `123456789012345678901234567890` all its
//! digits. Two ids are equal when their texts are (`1e2` is not `100`), which is what
//! matching a reply to its call needs.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;
use std::str::FromStr;

/// A request id, echoed in its response exactly as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Id {
    /// `null`: what a response carries when the request's id could not be read.
    #[default]
    Null,
    /// A number, kept as the client spelled it.
    Number(IdNumber),
    /// A string.
    String(String),
}

/// A numeric id, as the exact JSON number text the client wrote.
///
/// Held inline up to 22 bytes (every i64 and u64 fits), so reading an ordinary id
/// allocates nothing; longer spellings go to the heap.
#[derive(Clone)]
pub struct IdNumber(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

const INLINE: usize = 22;

impl IdNumber {
    /// Only from text already known to be a JSON number.
    fn new(text: &str) -> Self {
        let n = text.len();
        IdNumber(if n <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..n].copy_from_slice(text.as_bytes());
            Repr::Inline {
                len: n as u8,
                bytes,
            }
        } else {
            Repr::Heap(text.into())
        })
    }

    /// The JSON text, exactly as received (or as made by `From<u64>`/`From<i64>`).
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Always a copy of a whole `&str` (ASCII, in fact): valid UTF-8.
            Repr::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Repr::Heap(s) => s,
        }
    }

    /// The id as a u64, if its text is a plain integer in range (`7`, not `7.0` or `7e0`).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_str().parse().ok()
    }

    /// The id as an i64, if its text is a plain integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_str().parse().ok()
    }

    /// The nearest double to the id's value.
    pub fn as_f64(&self) -> Option<f64> {
        self.as_str().parse().ok()
    }
}

impl PartialEq for IdNumber {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for IdNumber {}

impl std::hash::Hash for IdNumber {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl fmt::Debug for IdNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdNumber({})", self.as_str())
    }
}

impl From<u64> for IdNumber {
    fn from(n: u64) -> Self {
        IdNumber::new(itoa::Buffer::new().format(n))
    }
}

impl From<i64> for IdNumber {
    fn from(n: i64) -> Self {
        IdNumber::new(itoa::Buffer::new().format(n))
    }
}

/// Why a text is not a JSON number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotANumber;

impl fmt::Display for NotANumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a JSON number")
    }
}

impl std::error::Error for NotANumber {}

/// Accepts exactly JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
impl FromStr for IdNumber {
    type Err = NotANumber;
    fn from_str(s: &str) -> Result<Self, NotANumber> {
        is_json_number(s)
            .then(|| IdNumber::new(s))
            .ok_or(NotANumber)
    }
}

fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

impl fmt::Display for IdNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(n.into())
    }
}

impl Id {
    /// An id from the exact JSON text of an `id` member; `None` when that is not a
    /// string, a number or null.
    pub(crate) fn from_raw(raw: &RawValue) -> Option<Id> {
        let text = raw.get();
        match text.as_bytes().first()? {
            b'"' => serde_json::from_str(text).ok().map(Id::String),
            b'n' => Some(Id::Null),
            b'-' | b'0'..=b'9' => Some(Id::Number(IdNumber::new(text))),
            _ => None,
        }
    }

    /// Append the id as JSON: a number byte for byte as it was received.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match self {
            Id::Null => out.extend_from_slice(b"null"),
            Id::Number(n) => out.extend_from_slice(n.as_str().as_bytes()),
            Id::String(s) => {
                serde_json::to_writer(&mut *out, s).expect("writing a string never fails")
            }
        }
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Null => f.write_str("null"),
            Id::Number(n) => f.write_str(n.as_str()),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// With serde_json a number is written byte-exact (as a raw value); integers are
/// written as integers to any serializer.
impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Null => s.serialize_unit(),
            Id::Number(n) => {
                // Only when the integer's own spelling is the text (not for `-0`).
                let plain = |t: &str| t == n.as_str();
                if let Some(i) = n.as_i64().filter(|&i| plain(itoa::Buffer::new().format(i))) {
                    s.serialize_i64(i)
                } else if let Some(u) = n.as_u64().filter(|&u| plain(itoa::Buffer::new().format(u)))
                {
                    s.serialize_u64(u)
                } else {
                    let raw: &RawValue =
                        serde_json::from_str(n.as_str()).map_err(serde::ser::Error::custom)?;
                    raw.serialize(s)
                }
            }
            Id::String(v) => s.serialize_str(v),
        }
    }
}

/// From a generic deserializer a number id is rebuilt from its value (an integer
/// exactly, a double in its shortest form); rpcmux's own parsers read the raw text
/// instead (see `present_raw`).
impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or null id")
            }
            fn visit_unit<E>(self) -> Result<Id, E> {
                Ok(Id::Null)
            }
            fn visit_i64<E>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Id, E> {
                Ok(Id::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                if !v.is_finite() {
                    return Err(E::custom("id is not a finite number"));
                }
                Ok(Id::Number(IdNumber::new(
                    ryu::Buffer::new().format_finite(v),
                )))
            }
            fn visit_str<E>(self, v: &str) -> Result<Id, E> {
                Ok(Id::String(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Deserialize a member that is present (even as `null`) as `Some` of its exact text,
/// so that an absent `id` (a notification) differs from `"id": null` (a request with a
/// null id), and a number keeps its spelling. serde_json only.
pub(crate) fn present_raw<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_text() {
        for ok in [
            "0",
            "-0",
            "7",
            "1e2",
            "1E+2",
            "1.50",
            "-0.0e-0",
            "123456789012345678901234567890",
        ] {
            let n: IdNumber = ok.parse().unwrap();
            assert_eq!(n.as_str(), ok);
            assert_eq!(Id::Number(n).to_string(), ok);
        }
        for bad in [
            "", "-", "01", "1.", ".5", "1e", "+1", "0x1", "1 ", "NaN", "1e+",
        ] {
            assert_eq!(bad.parse::<IdNumber>(), Err(NotANumber), "{bad:?}");
        }
        assert_eq!(Id::from(7), Id::Number("7".parse().unwrap()));
        assert_ne!(
            Id::Number("1e2".parse().unwrap()),
            Id::Number("100".parse().unwrap())
        );
        let n: IdNumber = "1e2".parse().unwrap();
        assert_eq!((n.as_u64(), n.as_f64()), (None, Some(100.0)));
        assert_eq!(IdNumber::from(u64::MAX).as_u64(), Some(u64::MAX));
        assert_eq!(IdNumber::from(-3i64).as_i64(), Some(-3));
        // Inline up to 22 bytes, on the heap beyond: the same to every user.
        let long = "1234567890123456789012345";
        for len in [1, 21, 22, 23, 25] {
            let n: IdNumber = long[..len].parse().unwrap();
            assert_eq!(n.as_str(), &long[..len]);
            assert_eq!(n.clone(), n);
            assert_eq!(format!("{n:?}"), format!("IdNumber({})", &long[..len]));
        }
    }

    #[test]
    fn serialize_is_exact_with_serde_json() {
        for text in [
            "7",
            "-0",
            "1e2",
            "1.50",
            "18446744073709551615",
            "123456789012345678901234567890",
        ] {
            let id = Id::Number(text.parse().unwrap());
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
        }
        assert_eq!(
            serde_json::to_string(&Id::from("a\"b")).unwrap(),
            r#""a\"b""#
        );
    }
}
