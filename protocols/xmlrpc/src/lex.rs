//! The XML lexer under [`crate::cursor::Cursor`]: tags, text, CDATA, end of document.
//!
//! Hand-written rather than quick-xml's general reader because it is the parser's hot
//! loop and XML-RPC needs only a sliver of XML: elements (attributes are checked for
//! well-formedness and skipped), text, CDATA, comments and processing instructions
//! (skipped). One `memchr` per text run, a byte loop per tag name. On the
//! echo(MusicEntry) body, `parse_call` runs 12% fewer instructions than over quick-xml,
//! 25% fewer with whitespace between elements skipped here (callgrind: 548k, 483k, 410k
//! instructions for criterion's test-mode run). Anything else (DTDs above all) is an error,
//! never interpreted.

use rpcmux_value::RpcError;

/// One lexical item. Text is raw: entity references are left for the caller.
pub(crate) enum Markup<'a> {
    Start { name: &'a str, empty: bool },
    End { name: &'a str },
    Text(&'a str),
    CData(&'a str),
    Eof,
}

pub(crate) struct Lexer<'a> {
    doc: &'a str,
    pos: usize,
    /// Names of the open elements, to check each end tag matches its start tag.
    open: Vec<&'a str>,
}

/// XML's whitespace: space, tab, newline, carriage return.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Bytes that end a name. Names are not checked against XML's full name grammar:
/// only XML-RPC's own names mean anything, and any other name is refused by the grammar.
fn ends_name(b: u8) -> bool {
    is_space(b) || matches!(b, b'/' | b'>' | b'<' | b'=' | b'"' | b'\'' | b'&')
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(doc: &'a str) -> Self {
        Lexer {
            doc,
            pos: 0,
            open: Vec::with_capacity(16),
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
        let bytes = self.doc.as_bytes();
        let mut at = self.pos;
        while at < bytes.len() && is_space(bytes[at]) {
            at += 1;
        }
        if at == bytes.len() || bytes[at] == b'<' {
            self.pos = at;
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
                Some(b'?') => self.skip_past(self.pos + 2, "?>", "processing instruction")?,
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
                    self.open.push(name);
                    return Ok(Markup::Start { name, empty: false });
                }
                Some(b'/') if bytes.get(after_space + 1) == Some(&b'>') => {
                    self.pos = after_space + 2;
                    return Ok(Markup::Start { name, empty: true });
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
        let (name, at) = self.name(self.pos + 2)?;
        let at = self.skip_space(at);
        match self.doc.as_bytes().get(at) {
            Some(b'>') => {}
            None => return Err(self.eof_in("an end tag")),
            Some(_) => return Err(self.error("malformed end tag")),
        }
        match self.open.pop() {
            Some(open) if open == name => {}
            Some(open) => {
                return Err(self.error(&format!("end tag </{name}> does not match <{open}>")))
            }
            None => return Err(self.error(&format!("end tag </{name}> without a start tag"))),
        }
        self.pos = at + 1;
        Ok(Markup::End { name })
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
                Markup::Start { name, empty } => {
                    format!("<{name}{}>", if empty { "/" } else { "" })
                }
                Markup::End { name } => format!("</{name}>"),
                Markup::Text(t) => format!("T{t}"),
                Markup::CData(t) => format!("C{t}"),
                Markup::Eof => return Ok(out),
            });
        }
    }

    #[test]
    fn items_and_skips() {
        let doc =
            "<?xml version='1.0'?>\n<!-- c --><a x=\"1\" y = '2'><b/>t&amp;<![CDATA[<z>]]></a >";
        assert_eq!(
            lex(doc).unwrap(),
            ["T\n", "<a>", "<b/>", "Tt&amp;", "C<z>", "</a>"]
        );
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
