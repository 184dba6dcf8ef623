//! Text → XML character data, appended to the output buffer.
//!
//! `<` and `&` must be escaped; `>` is escaped too so `]]>` can never appear. `\r` is
//! written as `&#13;` because a parser normalizes a literal CR to LF, so only the
//! reference survives the round trip. The other C0 controls (all but tab and newline)
//! and U+FFFE/U+FFFF cannot appear in XML 1.0 at all, not even as references (see
//! `xmlchar.rs`): [`escape_into`] reports the first one it meets, and the writers refuse
//! the value (`try_write_*`) or answer with a fault (`write_response`). Only the lenient
//! writers that cannot fail (`write_call`, `write_value`) leave them as character
//! references, which every XML 1.0 parser (rpcmux's included) then refuses loudly:
//! never does anyone receive silently altered text.

use crate::xmlchar::is_xml_char;
use std::borrow::Cow;

/// For each byte: whether it needs a replacement (else it is copied as is). 0xEF is
/// the lead byte of U+FFFE/U+FFFF, checked exactly when met.
static NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b != b'\t' as usize && b != b'\n' as usize;
        b += 1;
    }
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xEF] = true;
    t
};

/// Append `s` as character data. Returns the first character XML 1.0 cannot carry, if
/// `s` holds one (written as a character reference, which no XML 1.0 reader accepts:
/// the caller decides whether to keep the output).
#[must_use]
pub(crate) fn escape_into(out: &mut Vec<u8>, s: &str) -> Option<char> {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut bad = None;
    for (i, &b) in bytes.iter().enumerate() {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
        let (c, len) = match b {
            b'<' | b'>' | b'&' | b'\r' => (char::from(b), 1),
            0xEF => match bytes.get(i + 1..i + 3) {
                Some([0xBF, 0xBE]) => ('\u{fffe}', 3),
                Some([0xBF, 0xBF]) => ('\u{ffff}', 3),
                // Any other character from U+F000 to U+FFFD: copied as is.
                _ => continue,
            },
            control => (char::from(control), 1),
        };
        out.extend_from_slice(&bytes[start..i]);
        match c {
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '&' => out.extend_from_slice(b"&amp;"),
            _ => {
                if !is_xml_char(c) {
                    bad = bad.or(Some(c));
                }
                out.extend_from_slice(b"&#");
                out.extend_from_slice(itoa::Buffer::new().format(u32::from(c)).as_bytes());
                out.push(b';');
            }
        }
        start = i + len;
    }
    out.extend_from_slice(&bytes[start..]);
    bad
}

/// `s` with every character XML 1.0 cannot carry spelled out visibly as `\u{1}`: for
/// text that is a message, not data (a fault string), which must still be sent.
pub(crate) fn visible(s: &str) -> Cow<'_, str> {
    if crate::xmlchar::find_forbidden(s).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_xml_char(c) {
            out.push(c);
        } else {
            out.push_str(&c.escape_unicode().to_string());
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut out = Vec::new();
        assert_eq!(escape_into(&mut out, s), None, "{s:?}");
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_markup_and_cr_only() {
        assert_eq!(esc("plain ☃"), "plain ☃");
        assert_eq!(esc("a<b>&c"), "a&lt;b&gt;&amp;c");
        assert_eq!(esc("x\r\ny\tz"), "x&#13;\ny\tz");
        assert_eq!(esc("\"'"), "\"'");
        assert_eq!(esc(""), "");
        // Characters from U+F000 to U+FFFD (lead byte 0xEF) are copied as they are.
        assert_eq!(esc("\u{f000}ｆ\u{fffd}<"), "\u{f000}ｆ\u{fffd}&lt;");
    }

    #[test]
    fn reports_what_xml_cannot_carry() {
        let mut out = Vec::new();
        assert_eq!(escape_into(&mut out, "a\u{1}\u{1b}"), Some('\u{1}'));
        assert_eq!(out, b"a&#1;&#27;");
        out.clear();
        assert_eq!(
            escape_into(&mut out, "x\u{fffe}\u{ffff}<"),
            Some('\u{fffe}')
        );
        assert_eq!(out, b"x&#65534;&#65535;&lt;");
        assert_eq!(visible("ok"), "ok");
        assert_eq!(visible("a\0b\u{ffff}"), "a\\u{0}b\\u{ffff}");
    }
}
