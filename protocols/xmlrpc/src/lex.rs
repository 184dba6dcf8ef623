//! The XML lexer under [`crate::cursor::Cursor`]: tags, text, CDATA, end of document.
//!
//! Hand-written rather than quick-xml's general reader because it is the parser's hot
//! loop and XML-RPC needs only a sliver of XML: elements (attributes are checked for
//! well-formedness and skipped), text, CDATA, comments and processing instructions
//! (skipped). One `memchr` per text run, a table lookup per byte of a tag name, and fast
//! paths for what clients nearly always write: a start tag the grammar expects, spelled
//! plainly (`<value>`, matched as one literal), an end tag (compared with the name kept
//! from its start tag, never classified again), and a scalar's text with nothing to
//! decode. On the echo(MusicEntry) body, `parse_call` ran 548k instructions over
//! quick-xml, 410k over this lexer without the fast paths, 215k with them (callgrind,
//! criterion's test-mode run). Anything else (DTDs above all) is an error,
//! never interpreted.

use crate::tag::Tag;
use rpcmux_value::RpcError;
use smallvec::SmallVec;

/// One lexical item. Text is raw: entity references are left for the caller.
pub(crate) enum Markup<'a> {
    /// A start tag, classified; `name` is its raw qualified name (for error messages).
    Start {
        name: &'a str,
        tag: Tag,
        empty: bool,
    },
    /// An end tag; it matched its start tag, whose class it carries.
    End {
        tag: Tag,
    },
    Text(&'a str),
    CData(&'a str),
    Eof,
}

pub(crate) struct Lexer<'a> {
    doc: &'a str,
    pos: usize,
    /// Names of the open elements, to check each end tag matches its start tag, and
    /// their classes, so an end tag is never classified again. Inline up to 16 deep
    /// (a call's usual nesting is 6-10), so opening a document allocates nothing.
    open: SmallVec<[(&'a str, Tag); 16]>,
}

/// XML's whitespace: space, tab, newline, carriage return.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Bytes that end a name, as a table: one load per byte of every tag name. Names are
/// not checked against XML's full name grammar: only XML-RPC's own names mean anything,
/// and any other name is refused by the grammar.
const ENDS_NAME: [bool; 256] = {
    let mut t = [false; 256];
    let enders = b" \t\n\r/><=\"'&";
    let mut i = 0;
    while i < enders.len() {
        t[enders[i] as usize] = true;
        i += 1;
    }
    t
};

/// `a == b` for two slices of the same length, inline: tag names are 2-16 bytes, and a
/// `memcmp` call per tag was the fast paths' largest cost. Compares the first and last
/// 8 (or 4) bytes as words, which overlap and so cover every length from 4 to 16.
#[inline(always)]
fn eq_short(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w8 = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap());
    let w4 = |s: &[u8], at: usize| u32::from_ne_bytes(s[at..at + 4].try_into().unwrap());
    match n {
        0..=3 => a == b,
        4..=7 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        8..=16 => w8(a, 0) == w8(b, 0) && w8(a, n - 8) == w8(b, n - 8),
        _ => a == b,
    }
}

fn ends_name(b: u8) -> bool {
    ENDS_NAME[b as usize]
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(doc: &'a str) -> Self {
        Lexer {
            doc,
            pos: 0,
            open: SmallVec::new(),
        }
    }

    /// Byte offset reached, for error messages.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Move past whitespace when markup (or the end) follows it; text with anything else
    /// in it is left for [`Lexer::next`].
    #[inline]
    pub(crate) fn skip_space_before_markup(&mut self) {
        let at = self.skip_space(self.pos);
        if matches!(self.doc.as_bytes().get(at), None | Some(b'<')) {
            self.pos = at;
        }
    }

    /// Consume `<name>` if it comes next, spelled exactly as `tag`'s canonical name with
    /// no attributes: what nearly every client writes, matched as one literal instead of
    /// lexed. Anything else is left for [`Lexer::next`].
    #[inline]
    pub(crate) fn eat_start(&mut self, tag: Tag) -> bool {
        let name = tag.name();
        let rest = &self.doc.as_bytes()[self.pos..];
        let n = name.len();
        if rest.len() > n + 1
            && rest[0] == b'<'
            && rest[n + 1] == b'>'
            && eq_short(&rest[1..n + 1], name.as_bytes())
        {
            self.open
                .push((&self.doc[self.pos + 1..self.pos + 1 + n], tag));
            self.pos += n + 2;
            true
        } else {
            false
        }
    }

    /// Consume `</name>` if it comes next and closes the innermost open element, which
    /// is a `tag`. Anything else is left for [`Lexer::next`].
    #[inline]
    pub(crate) fn eat_end(&mut self, tag: Tag) -> bool {
        self.innermost_is(tag) && self.eat_end_of_innermost().is_some()
    }

    /// Whether the innermost open element is a `tag`.
    fn innermost_is(&self, tag: Tag) -> bool {
        matches!(self.open.last(), Some(&(_, open)) if open == tag)
    }

    /// `</name>` of the innermost open element, exactly (no space before `>`): one
    /// comparison with the name kept from its start tag. Returns the element's class.
    #[inline]
    fn eat_end_of_innermost(&mut self) -> Option<Tag> {
        let &(name, tag) = self.open.last()?;
        let rest = &self.doc.as_bytes()[self.pos..];
        let n = name.len();
        if rest.len() > n + 2
            && rest[0] == b'<'
            && rest[1] == b'/'
            && rest[n + 2] == b'>'
            && eq_short(&rest[2..n + 2], name.as_bytes())
        {
            self.open.pop();
            self.pos += n + 3;
            Some(tag)
        } else {
            None
        }
    }

    /// Text up to the end tag of the innermost open element, and that end tag, when the
    /// text holds no `<`, `&` or `\r` (nothing to decode) and is at most `max` bytes: the
    /// body of nearly every scalar. Otherwise nothing is consumed.
    #[inline]
    pub(crate) fn eat_plain_text_and_end(&mut self, tag: Tag, max: usize) -> Option<&'a str> {
        if !self.innermost_is(tag) {
            return None;
        }
        let start = self.pos;
        let bytes = &self.doc.as_bytes()[start..];
        let len = memchr::memchr3(b'<', b'&', b'\r', bytes)?;
        if bytes[len] != b'<' || len > max {
            return None;
        }
        self.pos = start + len;
        if self.eat_end_of_innermost().is_some() {
            Some(&self.doc[start..start + len])
        } else {
            self.pos = start;
            None
        }
    }

    #[inline]
    pub(crate) fn next(&mut self) -> Result<Markup<'a>, RpcError> {
        let bytes = self.doc.as_bytes();
        loop {
            let Some(&first) = bytes.get(self.pos) else {
                return Ok(Markup::Eof);
            };
            if first != b'<' {
                let end =
                    memchr::memchr(b'<', &bytes[self.pos..]).map_or(bytes.len(), |i| self.pos + i);
                let text = &self.doc[self.pos..end];
                self.pos = end;
                return Ok(Markup::Text(text));
            }
            match bytes.get(self.pos + 1) {
                Some(b'/') => return self.end_tag(),
                Some(b'?') => {
                    // XML's one PI rule rpcmux applies: a target right after `<?` (`<?>`,
                    // `<??>` and `<? x?>` are refused, as by any XML reader).
                    if matches!(
                        bytes.get(self.pos + 2),
                        Some(b'>' | b' ' | b'\t' | b'\r' | b'\n')
                    ) || bytes[self.pos + 2..].starts_with(b"?>")
                    {
                        return Err(self.error("a processing instruction without a target"));
                    }
                    self.skip_past(self.pos + 2, "?>", "processing instruction")?
                }
                Some(b'!') => {
                    let rest = &bytes[self.pos..];
                    if rest.starts_with(b"<!--") {
                        self.skip_past(self.pos + 4, "-->", "comment")?;
                    } else if rest.starts_with(b"<![CDATA[") {
                        let start = self.pos + 9;
                        self.skip_past(start, "]]>", "CDATA section")?;
                        return Ok(Markup::CData(&self.doc[start..self.pos - 3]));
                    } else if rest.len() >= 9 && rest[..9].eq_ignore_ascii_case(b"<!DOCTYPE") {
                        // Refused before anything in it is read: no entity is ever declared,
                        // so none is ever expanded (billion laughs, external entities).
                        return Err(RpcError::parse_error(
                            "DTDs are not allowed (<!DOCTYPE> and entity declarations are refused)",
                        ));
                    } else {
                        return Err(self.error("malformed markup after '<!'"));
                    }
                }
                _ => return self.start_tag(),
            }
        }
    }

    /// Move past the next `end` at or after `from`.
    fn skip_past(&mut self, from: usize, end: &str, what: &str) -> Result<(), RpcError> {
        let hay = &self.doc.as_bytes()[from.min(self.doc.len())..];
        match memchr::memmem::find(hay, end.as_bytes()) {
            Some(i) => {
                self.pos = from + i + end.len();
                Ok(())
            }
            None => Err(self.eof_in(what)),
        }
    }

    /// A name starting at `at`; returns it and the offset after it.
    #[inline]
    fn name(&self, at: usize) -> Result<(&'a str, usize), RpcError> {
        let bytes = self.doc.as_bytes();
        let mut end = at;
        while end < bytes.len() && !ends_name(bytes[end]) {
            end += 1;
        }
        if end == at {
            return Err(if end >= bytes.len() {
                self.eof_in("a tag")
            } else {
                self.error("a tag without a name")
            });
        }
        if bytes[at].is_ascii_digit() || matches!(bytes[at], b'-' | b'.') {
            return Err(self.error("a name may not start with a digit, '-' or '.'"));
        }
        Ok((&self.doc[at..end], end))
    }

    fn skip_space(&self, mut at: usize) -> usize {
        let bytes = self.doc.as_bytes();
        while at < bytes.len() && is_space(bytes[at]) {
            at += 1;
        }
        at
    }

    fn start_tag(&mut self) -> Result<Markup<'a>, RpcError> {
        let bytes = self.doc.as_bytes();
        let (name, mut at) = self.name(self.pos + 1)?;
        loop {
            let after_space = self.skip_space(at);
            match bytes.get(after_space) {
                None => return Err(self.eof_in("a tag")),
                Some(b'>') => {
                    self.pos = after_space + 1;
                    let tag = Tag::from_name(name.as_bytes());
                    self.open.push((name, tag));
                    return Ok(Markup::Start {
                        name,
                        tag,
                        empty: false,
                    });
                }
                Some(b'/') if bytes.get(after_space + 1) == Some(&b'>') => {
                    self.pos = after_space + 2;
                    let tag = Tag::from_name(name.as_bytes());
                    return Ok(Markup::Start {
                        name,
                        tag,
                        empty: true,
                    });
                }
                Some(_) if after_space == at => {
                    return Err(self.error("malformed tag (attributes need a space before them)"))
                }
                Some(_) => at = self.attribute(after_space)?,
            }
        }
    }

    /// Check one `name="value"` (or single-quoted) attribute and skip it.
    fn attribute(&self, at: usize) -> Result<usize, RpcError> {
        let bytes = self.doc.as_bytes();
        let (_, at) = self.name(at)?;
        let at = self.skip_space(at);
        if bytes.get(at) != Some(&b'=') {
            return Err(self.error("malformed attribute (expected '=')"));
        }
        let at = self.skip_space(at + 1);
        let quote = match bytes.get(at) {
            Some(&q @ (b'"' | b'\'')) => q,
            None => return Err(self.eof_in("a tag")),
            Some(_) => return Err(self.error("attribute value without quotes")),
        };
        let Some(len) = memchr::memchr(quote, &bytes[at + 1..]) else {
            return Err(self.eof_in("an attribute value"));
        };
        if bytes[at + 1..at + 1 + len].contains(&b'<') {
            return Err(self.error("'<' in an attribute value"));
        }
        Ok(at + 1 + len + 1)
    }

    fn end_tag(&mut self) -> Result<Markup<'a>, RpcError> {
        if let Some(tag) = self.eat_end_of_innermost() {
            return Ok(Markup::End { tag });
        }
        let (name, at) = self.name(self.pos + 2)?;
        let at = self.skip_space(at);
        match self.doc.as_bytes().get(at) {
            Some(b'>') => {}
            None => return Err(self.eof_in("an end tag")),
            Some(_) => return Err(self.error("malformed end tag")),
        }
        let tag = match self.open.pop() {
            Some((open, tag)) if open == name => tag,
            Some((open, _)) => {
                return Err(self.error(&format!("end tag </{name}> does not match <{open}>")))
            }
            None => return Err(self.error(&format!("end tag </{name}> without a start tag"))),
        };
        self.pos = at + 1;
        Ok(Markup::End { tag })
    }

    #[cold]
    fn error(&self, what: &str) -> RpcError {
        RpcError::parse_error(format_args!("{what} (at byte {})", self.pos))
    }

    #[cold]
    fn eof_in(&self, what: &str) -> RpcError {
        RpcError::parse_error(format_args!(
            "unexpected end of document inside {what} (at byte {})",
            self.pos
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(doc: &str) -> Result<Vec<String>, RpcError> {
        let mut l = Lexer::new(doc);
        let mut out = Vec::new();
        loop {
            out.push(match l.next()? {
                Markup::Start { name, empty, .. } => {
                    format!("<{name}{}>", if empty { "/" } else { "" })
                }
                Markup::End { tag } => format!("</{}>", tag.name()),
                Markup::Text(t) => format!("T{t}"),
                Markup::CData(t) => format!("C{t}"),
                Markup::Eof => return Ok(out),
            });
        }
    }

    #[test]
    fn items_and_skips() {
        let doc =
            "<?xml version='1.0'?>\n<!-- c --><value x=\"1\" y = '2'><nil/>t&amp;<![CDATA[<z>]]></value >";
        assert_eq!(
            lex(doc).unwrap(),
            ["T\n", "<value>", "<nil/>", "Tt&amp;", "C<z>", "</value>"]
        );
    }

    #[test]
    fn eq_short_matches_slice_equality() {
        let words = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcde",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "methodResponse",
            "dateTime.iso8601",
            "abcdefghijklmnopq",
        ];
        for a in words {
            for b in words {
                assert_eq!(eq_short(a.as_bytes(), b.as_bytes()), a == b, "{a} {b}");
            }
            // One byte changed anywhere is seen.
            for i in 0..a.len() {
                let mut c = a.as_bytes().to_vec();
                c[i] ^= 1;
                assert!(!eq_short(a.as_bytes(), &c), "{a} at {i}");
            }
        }
    }

    #[test]
    fn malformed_is_an_error() {
        for bad in [
            "<a></b>",
            "</a>",
            "<a x>",
            "<a x=1>",
            "<a x='1'y='2'>",
            "<a",
            "<a x='",
            "<!-- x",
            "<![CDATA[ x",
            "<?x",
            "<?>x?>",
            "<??>",
            "<? x?>",
            "<>",
            "< a>",
            "<1a>",
            "<!ENTITY x 'y'>",
            "<!DOCTYPE x>",
            "<a/ >",
        ] {
            assert!(lex(bad).is_err(), "{bad:?} lexed");
        }
    }
}
