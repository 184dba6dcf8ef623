//! Text → XML character data, appended to the output buffer.
//!
//! `<` and `&` must be escaped; `>` is escaped too so `]]>` can never appear. `\r` is
//! written as `&#13;` because a parser normalizes a literal CR to LF, so only the
//! reference survives the round trip. The other C0 controls (all but tab and newline)
//! cannot appear in XML 1.0 at all: they are written as character references too, which
//! rpcmux's own reader (see `unescape.rs`) reads back exactly and strict parsers (expat,
//! so Python) reject loudly, rather than anyone receiving silently altered text.

/// For each byte: whether it needs a replacement (else it is copied as is).
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
    t
};

pub(crate) fn escape_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            control => {
                out.extend_from_slice(b"&#");
                out.extend_from_slice(itoa::Buffer::new().format(control).as_bytes());
                out.push(b';');
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut out = Vec::new();
        escape_into(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_markup_cr_and_controls_only() {
        assert_eq!(esc("plain ☃"), "plain ☃");
        assert_eq!(esc("a<b>&c"), "a&lt;b&gt;&amp;c");
        assert_eq!(esc("x\r\ny\tz"), "x&#13;\ny\tz");
        assert_eq!(esc("\u{1}\u{1b}"), "&#1;&#27;");
        assert_eq!(esc("\"'"), "\"'");
        assert_eq!(esc(""), "");
    }
}
