//! Text of a typed scalar element → [`Value`].
//!
//! Input is read leniently where real clients differ and nothing is lost by it:
//! numbers may carry surrounding whitespace; every integer spelling (`int`, `i4`,
//! `i8`, `ex:i1`, `ex:i2`, `ex:biginteger`) takes any value that fits 64 bits (some
//! clients send large values in `<int>`); booleans may be `true`/`false` as well as
//! `1`/`0`; base64 may be line-wrapped and unpadded.

use crate::cursor::is_xml_space;
use crate::tag::Tag;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use rpcmux_value::{DateTime, RpcError, Str, Value};
use std::borrow::Cow;

/// Standard alphabet; padding optional; stray low bits tolerated (some encoders leave them).
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Decode the text of `<tag>text</tag>`, `tag` being a scalar type (see [`Tag::is_scalar`]).
pub(crate) fn decode(tag: Tag, text: Cow<'_, str>) -> Result<Value, RpcError> {
    let bad = |what: &str| {
        let shown: String = text.chars().take(40).collect();
        RpcError::invalid_request(format_args!("bad <{what}> value {shown:?}"))
    };
    match tag {
        Tag::String => Ok(Value::String(Str::from(text))),
        Tag::Int => text
            .trim()
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| bad("int")),
        Tag::Boolean => match text.trim() {
            "1" => Ok(Value::Bool(true)),
            "0" => Ok(Value::Bool(false)),
            t if t.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            t if t.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            _ => Err(bad("boolean")),
        },
        // Rust's parser takes what Python's float() writes and reads: exponents,
        // `inf`, `-inf`, `nan` (any case).
        Tag::Double => text
            .trim()
            .parse::<f64>()
            .map(Value::Double)
            .map_err(|_| bad("double")),
        Tag::DateTime => DateTime::parse(&text)
            .map(Value::DateTime)
            .ok_or_else(|| bad("dateTime.iso8601")),
        Tag::Base64 => decode_base64(&text).ok_or_else(|| bad("base64")),
        Tag::Nil if is_xml_space(&text) => Ok(Value::Nil),
        Tag::Nil => Err(bad("nil")),
        _ => Err(RpcError::internal(format_args!(
            "<{}> is not a scalar type",
            tag.name()
        ))),
    }
}

/// Python's client wraps base64 every 76 characters; any XML whitespace is skipped.
fn decode_base64(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let decoded = if bytes.iter().any(u8::is_ascii_whitespace) {
        let compact: Vec<u8> = bytes
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        LENIENT_BASE64.decode(compact)
    } else {
        LENIENT_BASE64.decode(bytes)
    };
    decoded.ok().map(Value::Bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(tag: Tag, text: &str) -> Result<Value, RpcError> {
        decode(tag, Cow::Borrowed(text))
    }

    #[test]
    fn integers_any_spelling_up_to_64_bits() {
        assert_eq!(d(Tag::Int, " 42\n").unwrap(), Value::Int(42));
        assert_eq!(d(Tag::Int, "+7").unwrap(), Value::Int(7));
        assert_eq!(
            d(Tag::Int, "-9223372036854775808").unwrap(),
            Value::Int(i64::MIN)
        );
        assert_eq!(d(Tag::Int, "9223372036854775808").unwrap_err().code, -32600);
        assert!(d(Tag::Int, "").is_err());
        assert!(d(Tag::Int, "1.5").is_err());
    }

    #[test]
    fn booleans() {
        assert_eq!(d(Tag::Boolean, "1").unwrap(), Value::Bool(true));
        assert_eq!(d(Tag::Boolean, " 0 ").unwrap(), Value::Bool(false));
        assert_eq!(d(Tag::Boolean, "TRUE").unwrap(), Value::Bool(true));
        assert!(d(Tag::Boolean, "2").is_err());
    }

    #[test]
    fn doubles_including_python_specials() {
        assert_eq!(d(Tag::Double, "3.5").unwrap(), Value::Double(3.5));
        assert_eq!(d(Tag::Double, "1e-300").unwrap(), Value::Double(1e-300));
        assert_eq!(
            d(Tag::Double, "-inf").unwrap(),
            Value::Double(f64::NEG_INFINITY)
        );
        assert!(matches!(d(Tag::Double, "nan").unwrap(), Value::Double(x) if x.is_nan()));
        assert!(d(Tag::Double, "one").is_err());
    }

    #[test]
    fn base64_wrapped_and_unpadded() {
        assert_eq!(
            d(Tag::Base64, "\naGVs\nbG8=\n").unwrap(),
            Value::Bytes(b"hello".to_vec())
        );
        assert_eq!(d(Tag::Base64, "aGk").unwrap(), Value::Bytes(b"hi".to_vec()));
        assert_eq!(d(Tag::Base64, "").unwrap(), Value::Bytes(vec![]));
        assert!(d(Tag::Base64, "a*b=").is_err());
    }

    #[test]
    fn datetimes_and_nil() {
        let want = Value::DateTime(DateTime::from_ymd_hms(2002, 1, 26, 7, 30, 0).unwrap());
        assert_eq!(d(Tag::DateTime, "20020126T07:30:00").unwrap(), want);
        // Apache's ex:dateTime carries a zone and milliseconds.
        assert_eq!(
            d(Tag::DateTime, "2002-01-26T08:30:00.000+01:00").unwrap(),
            want
        );
        assert!(d(Tag::DateTime, "yesterday").is_err());
        assert_eq!(d(Tag::Nil, "").unwrap(), Value::Nil);
        assert!(d(Tag::Nil, "x").is_err());
    }
}
