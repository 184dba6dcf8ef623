//! A typed scalar's text → [`Value`], by XML-RPC's types and rpcmux's documented
//! leniencies (surrounding whitespace, `true`/`false`, 64-bit ints in any int tag,
//! wrapped and unpadded base64). Dates go through `rpcmux_value::DateTime::parse`:
//! the date grammar is that crate's, tested there; this target tests the XML around it.
use super::tag::Tag;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use rpcmux_value::{DateTime, Value};

const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

pub fn decode(tag: Tag, text: &str) -> Result<Value, String> {
    let bad = || format!("bad <{tag:?}> text {text:?}");
    match tag {
        Tag::String => Ok(Value::from(text.to_owned())),
        Tag::Int => text.trim().parse().map(Value::Int).map_err(|_| bad()),
        Tag::Boolean => match text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" => Ok(Value::Bool(true)),
            "0" | "false" => Ok(Value::Bool(false)),
            _ => Err(bad()),
        },
        Tag::Double => text.trim().parse().map(Value::Double).map_err(|_| bad()),
        Tag::DateTime => DateTime::parse(text).map(Value::DateTime).ok_or_else(bad),
        Tag::Base64 => {
            let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
            LENIENT.decode(compact).map(Value::Bytes).map_err(|_| bad())
        }
        Tag::Nil if text.bytes().all(|b| b" \t\n\r".contains(&b)) => Ok(Value::Nil),
        _ => Err(bad()),
    }
}
