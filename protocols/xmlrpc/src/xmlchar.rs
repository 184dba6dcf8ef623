//! The characters XML 1.0 can carry at all (its `Char` production):
//! TAB, LF, CR, U+0020..=U+D7FF, U+E000..=U+FFFD, U+10000..=U+10FFFF.
//!
//! In UTF-8 text the others are the C0 controls but TAB, LF and CR (one byte each,
//! 0x00-0x08, 0x0B, 0x0C, 0x0E-0x1F) and the two noncharacters U+FFFE and U+FFFF (`EF BF
//! BE`, `EF BF BF`); surrogates cannot occur in valid UTF-8. Neither raw nor as a
//! character reference (`&#1;`) may they appear in a document: strict parsers (expat,
//! so Python) refuse such a document, and so does rpcmux, both reading and writing.

use rpcmux_value::{RpcError, Value};

/// Whether XML 1.0 allows `c` in a document.
#[inline]
pub(crate) fn is_xml_char(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => true,
        '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => false,
        _ => true,
    }
}

/// Whether a byte may begin a character XML 1.0 refuses: a control (not TAB, LF, CR),
/// or 0xEF, the lead byte of U+FFFE/U+FFFF (and of other characters, checked exactly).
/// As 0/1 arithmetic, so that a loop over a block compiles to vector compares.
#[inline(always)]
fn suspect(b: u8) -> u8 {
    let control = u8::from(b < 0x20) & u8::from(b != b'\t') & u8::from(b != b'\n');
    (control & u8::from(b != b'\r')) | u8::from(b == 0xEF)
}

/// Any suspect byte in `block`, without a branch per byte.
#[inline(always)]
fn any_suspect(block: &[u8]) -> bool {
    block.iter().fold(0, |acc, &b| acc | suspect(b)) != 0
}

/// The first character of `s` that XML 1.0 refuses, with its byte offset.
///
/// Scans 64 bytes at a time without branching inside a block (it vectorizes: about a
/// third of an instruction per byte); only a block holding a suspect byte is looked at
/// closely. It runs over every document read.
#[inline]
pub(crate) fn find_forbidden(s: &str) -> Option<(usize, char)> {
    const BLOCK: usize = 64;
    let bytes = s.as_bytes();
    let blocks = bytes.chunks_exact(BLOCK);
    let tail = blocks.remainder();
    for (i, block) in blocks.enumerate() {
        if any_suspect(block) {
            if let Some(found) = exact(bytes, i * BLOCK, (i + 1) * BLOCK) {
                return Some(found);
            }
        }
    }
    let from = bytes.len() - tail.len();
    if any_suspect(tail) {
        return exact(bytes, from, bytes.len());
    }
    None
}

#[cold]
fn exact(bytes: &[u8], from: usize, to: usize) -> Option<(usize, char)> {
    (from..to).find_map(|i| match bytes[i] {
        b @ 0..=0x1f if !matches!(b, b'\t' | b'\n' | b'\r') => Some((i, char::from(b))),
        0xEF => match bytes.get(i + 1..i + 3) {
            Some([0xBF, 0xBE]) => Some((i, '\u{fffe}')),
            Some([0xBF, 0xBF]) => Some((i, '\u{ffff}')),
            _ => None,
        },
        _ => None,
    })
}

/// The error for a value holding `c`, which no XML-RPC document can carry.
pub(crate) fn unencodable(c: char) -> RpcError {
    RpcError::internal(format_args!(
        "string contains a character XML 1.0 cannot carry (U+{:04X})",
        u32::from(c)
    ))
}

/// Check that every string and struct member name in `v` can be carried by XML-RPC,
/// i.e. holds only characters XML 1.0 allows (no C0 control but TAB, LF, CR; no U+FFFE,
/// U+FFFF). The error (-32603) names the first offending character:
/// `string contains a character XML 1.0 cannot carry (U+0001)`.
///
/// [`crate::try_write_response`] and [`crate::try_write_call`] make this check while
/// writing, at no extra cost; call this one to check a value without writing it.
pub fn check_xml_chars(v: &Value) -> Result<(), RpcError> {
    let check = |s: &str| match find_forbidden(s) {
        Some((_, c)) => Err(unencodable(c)),
        None => Ok(()),
    };
    // Iterative, like the reader: a deeply nested value cannot exhaust the stack here.
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        match v {
            Value::String(s) => check(s)?,
            Value::Array(items) => todo.extend(items),
            Value::Struct(m) => {
                for (k, item) in m.iter() {
                    check(k)?;
                    todo.push(item);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    #[test]
    fn finds_exactly_the_characters_xml_refuses() {
        for c in (0..0x20u32)
            .chain([0xFFFE, 0xFFFF])
            .map(|u| char::from_u32(u).unwrap())
        {
            let allowed = matches!(c, '\t' | '\n' | '\r');
            assert_eq!(is_xml_char(c), allowed, "{c:?}");
            // At every offset within and across 64-byte blocks.
            for at in [0, 1, 62, 63, 64, 65, 130] {
                let s = format!("{}{c}tail", "é".repeat(at / 2) + &"x".repeat(at % 2));
                let found = find_forbidden(&s);
                if allowed {
                    assert_eq!(found, None);
                } else {
                    assert_eq!(found, Some((at, c)), "{c:?} at {at}");
                }
            }
        }
        for ok in [
            "",
            "plain \t\r\n",
            "\u{7f}\u{80}\u{d7ff}\u{e000}\u{fffd}\u{10000}",
            "ｆｕｌｌ\u{ff5e}\u{efff}",
        ] {
            assert_eq!(find_forbidden(ok), None, "{ok:?}");
        }
    }

    #[test]
    fn check_walks_strings_and_member_names() {
        assert!(check_xml_chars(&vstruct! {"a" => Value::Array(vec!["x\ty".into()])}).is_ok());
        let err = check_xml_chars(&Value::Array(vec![1.into(), "a\u{1}".into()])).unwrap_err();
        assert_eq!(err.code, RpcError::INTERNAL_ERROR);
        assert!(err.message.contains("(U+0001)"), "{err}");
        let err = check_xml_chars(&vstruct! {"k\u{ffff}" => 1}).unwrap_err();
        assert!(err.message.contains("(U+FFFF)"), "{err}");
        // Bytes travel as base64: any byte is fine.
        assert!(check_xml_chars(&Value::Bytes(vec![0, 1, 2])).is_ok());
    }
}
