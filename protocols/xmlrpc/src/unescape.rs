//! `&...;` references in text → characters.
//!
//! Only XML's five predefined entities and character references exist here: no DTD is
//! ever read, so no other entity can be declared, and any other name is an error.
//! A character reference must name a character XML 1.0 allows (see `xmlchar.rs`):
//! `&#0;`, `&#1;`, `&#xFFFE;` and the like are refused, as expat refuses them; only
//! TAB, LF and CR among the C0 controls (`&#13;` is how a CR survives).

use crate::xmlchar::is_xml_char;
use std::borrow::Cow;

pub(crate) fn unescape(s: &str) -> Result<Cow<'_, str>, String> {
    let Some(first) = s.find('&') else {
        return Ok(Cow::Borrowed(s));
    };
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..first]);
    // Invariant: `rest` starts at a '&'.
    let mut rest = &s[first..];
    loop {
        let end = rest
            .find(';')
            .ok_or_else(|| "'&' without a closing ';'".to_owned())?;
        out.push(resolve(&rest[1..end])?);
        rest = &rest[end + 1..];
        match rest.find('&') {
            Some(i) => {
                out.push_str(&rest[..i]);
                rest = &rest[i..];
            }
            None => {
                out.push_str(rest);
                return Ok(Cow::Owned(out));
            }
        }
    }
}

fn resolve(name: &str) -> Result<char, String> {
    let c = match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => match name.strip_prefix('#') {
            Some(hex) if hex.starts_with('x') => number(&hex[1..], 16),
            Some(dec) => number(dec, 10),
            None => None,
        },
    };
    match c {
        Some(c) if is_xml_char(c) => Ok(c),
        Some(c) => Err(format!(
            "&{name}; refers to U+{:04X}, a character XML 1.0 does not allow",
            u32::from(c)
        )),
        None => {
            let shown: String = name.chars().take(20).collect();
            Err(format!("unknown or invalid reference &{shown};"))
        }
    }
}

/// Digits only (`u32::from_str_radix` would also take a sign); a Unicode scalar value.
fn number(digits: &str, radix: u32) -> Option<char> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix)
        .ok()
        .and_then(char::from_u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_and_numeric() {
        assert!(matches!(unescape("plain").unwrap(), Cow::Borrowed("plain")));
        assert_eq!(
            unescape("&lt;a&gt; &amp; &quot;&apos; &#65;&#x42;&#x1F600;&#9;&#10;&#13;").unwrap(),
            "<a> & \"' AB😀\t\n\r"
        );
    }

    #[test]
    fn refuses_references_to_characters_xml_forbids() {
        for bad in ["&#0;", "&#1;", "&#x1F;", "&#11;", "&#xFFFE;", "&#65535;"] {
            let err = unescape(bad).unwrap_err();
            assert!(err.contains("XML 1.0 does not allow"), "{bad}: {err}");
        }
        assert_eq!(
            unescape("&#x20;&#xFFFD;&#xE000;").unwrap(),
            " \u{fffd}\u{e000}"
        );
    }

    #[test]
    fn rejects_unknown_and_malformed() {
        for bad in [
            "&foo;",
            "&lol9;",
            "&",
            "a & b",
            "&#;",
            "&#x;",
            "&#-1;",
            "&#+1;",
            "&#xD800;",
            "&#1114112;",
            "&#99999999999;",
            "&#x 41;",
        ] {
            assert!(unescape(bad).is_err(), "{bad}");
        }
    }
}
