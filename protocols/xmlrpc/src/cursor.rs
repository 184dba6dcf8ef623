//! A thin layer over the lexer ([`crate::lex`]): it yields only what XML-RPC cares
//! about (open tag, close tag, decoded text, end), enforces the document-wide rules
//! (UTF-8 only, XML 1.0 characters only, no DTD, element count) and turns every failure into an [`RpcError`].
//!
//! Comments, processing instructions and the XML declaration are skipped wherever
//! they appear. Text is decoded as it arrives: entities and character references are
//! resolved, and line ends are normalized (`\r\n` and lone `\r` become `\n`), as XML
//! requires and as Python's expat does; a `\r` written as `&#13;` survives.

use crate::lex::{Lexer, Markup};
use crate::tag::Tag;
use crate::unescape::unescape;
use crate::xmlchar::find_forbidden;
use crate::Limits;
use rpcmux_value::RpcError;
use std::borrow::Cow;

/// One token of the document, as the XML-RPC grammar sees it.
pub(crate) enum Tok<'a> {
    Open(Tag),
    Close(Tag),
    /// Character data (text or CDATA), already decoded.
    Text(Cow<'a, str>),
    Eof,
}

pub(crate) struct Cursor<'a> {
    lexer: Lexer<'a>,
    limits: Limits,
    elements: usize,
    /// `<x/>` is reported as `Open(x)` then, on the next call, `Close(x)`.
    pending_close: Option<Tag>,
    /// The raw name of the last [`Tag::Other`] seen, so errors can name it.
    other_name: String,
}

impl<'a> Cursor<'a> {
    /// Check the body is UTF-8 (the only encoding accepted, BOM allowed) and start reading.
    pub(crate) fn new(body: &'a [u8], limits: &Limits) -> Result<Self, RpcError> {
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let text = std::str::from_utf8(body).map_err(|e| {
            RpcError::parse_error(format_args!(
                "body is not valid UTF-8 (at byte {})",
                e.valid_up_to()
            ))
        })?;
        // Once over the whole document, so that no path of the lexer (text, CDATA,
        // names, attributes, comments) can let through a character XML forbids.
        if let Some((at, c)) = find_forbidden(text) {
            return Err(RpcError::parse_error(format_args!(
                "character U+{:04X} is not allowed in XML 1.0 (at byte {at})",
                u32::from(c)
            )));
        }
        Ok(Cursor {
            lexer: Lexer::new(text),
            limits: *limits,
            elements: 0,
            pending_close: None,
            other_name: String::new(),
        })
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The next token, whitespace included.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> Result<Tok<'a>, RpcError> {
        if let Some(tag) = self.pending_close.take() {
            return Ok(Tok::Close(tag));
        }
        match self.lexer.next()? {
            Markup::Start { name, tag, empty } => {
                self.count_element()?;
                if tag == Tag::Other {
                    self.other_name = name.to_owned();
                }
                if empty {
                    self.pending_close = Some(tag);
                }
                Ok(Tok::Open(tag))
            }
            Markup::End { tag } => Ok(Tok::Close(tag)),
            Markup::Text(t) => decode_text(Cow::Borrowed(t), true).map(Tok::Text),
            Markup::CData(t) => decode_text(Cow::Borrowed(t), false).map(Tok::Text),
            Markup::Eof => Ok(Tok::Eof),
        }
    }

    #[inline]
    fn count_element(&mut self) -> Result<(), RpcError> {
        self.elements += 1;
        if self.elements > self.limits.max_elements {
            return Err(self.too_many_elements());
        }
        Ok(())
    }

    /// Consume `<want>` (whitespace before it skipped) if it comes next in its plain
    /// spelling; `false` leaves everything for the general path. The fast path of
    /// [`Cursor::expect_open`] and of the grammar's "this or that" choices.
    #[inline]
    pub(crate) fn eat_open(&mut self, want: Tag) -> Result<bool, RpcError> {
        if self.pending_close.is_none() {
            self.lexer.skip_space_before_markup();
        }
        self.eat_open_here(want)
    }

    /// [`Cursor::eat_open`] without skipping whitespace first (where whitespace would be
    /// content, as right after `<value>`).
    #[inline]
    pub(crate) fn eat_open_here(&mut self, want: Tag) -> Result<bool, RpcError> {
        if self.pending_close.is_some() || !self.lexer.eat_start(want) {
            return Ok(false);
        }
        self.count_element()?;
        Ok(true)
    }

    /// Consume `</want>` (whitespace before it skipped) if it comes next and closes the
    /// innermost element; `false` leaves everything for the general path.
    #[inline]
    pub(crate) fn eat_close(&mut self, want: Tag) -> bool {
        if let Some(tag) = self.pending_close {
            if tag == want {
                self.pending_close = None;
                return true;
            }
            return false;
        }
        self.lexer.skip_space_before_markup();
        self.lexer.eat_end(want)
    }

    #[cold]
    fn too_many_elements(&self) -> RpcError {
        RpcError::invalid_request(format_args!(
            "more than {} XML elements (limit max_elements)",
            self.limits.max_elements
        ))
    }

    /// The next token that is not whitespace-only text. Other text here is misplaced.
    pub(crate) fn next_markup(&mut self) -> Result<Tok<'a>, RpcError> {
        if self.pending_close.is_none() {
            // The newlines clients put between elements: skipped in place, without
            // making (and then discarding) a text token for each.
            self.lexer.skip_space_before_markup();
        }
        loop {
            match self.next()? {
                Tok::Text(t) if is_xml_space(&t) => continue,
                Tok::Text(_) => return Err(self.invalid("unexpected text between elements")),
                tok => return Ok(tok),
            }
        }
    }

    pub(crate) fn expect_open(&mut self, want: Tag) -> Result<(), RpcError> {
        if self.eat_open(want)? {
            return Ok(());
        }
        match self.next_markup()? {
            Tok::Open(t) if t == want => Ok(()),
            tok => Err(self.unexpected(&tok, &format!("<{}>", want.name()))),
        }
    }

    pub(crate) fn expect_close(&mut self, want: Tag) -> Result<(), RpcError> {
        if self.eat_close(want) {
            return Ok(());
        }
        match self.next_markup()? {
            Tok::Close(t) if t == want => Ok(()),
            tok => Err(self.unexpected(&tok, &format!("</{}>", want.name()))),
        }
    }

    /// Skip the prolog (declaration, comments, whitespace) and open the root element.
    /// A wrong root is an invalid request; no root at all is not XML-RPC, a parse error.
    pub(crate) fn expect_root(&mut self, want: Tag) -> Result<(), RpcError> {
        loop {
            return match self.next()? {
                Tok::Open(t) if t == want => Ok(()),
                Tok::Text(t) if is_xml_space(&t) => continue,
                Tok::Text(_) => Err(RpcError::parse_error("text before the root element")),
                Tok::Eof => Err(RpcError::parse_error("no root element")),
                tok => Err(self.unexpected(&tok, &format!("<{}>", want.name()))),
            };
        }
    }

    /// After the root closed: only whitespace, comments and PIs may follow.
    pub(crate) fn expect_eof(&mut self) -> Result<(), RpcError> {
        loop {
            return match self.next()? {
                Tok::Eof => Ok(()),
                Tok::Text(t) if is_xml_space(&t) => continue,
                _ => Err(RpcError::parse_error(format_args!(
                    "content after the root element (at byte {})",
                    self.lexer.position()
                ))),
            };
        }
    }

    /// The text content of a text-only element whose open tag was just read, up to and
    /// including its close tag. An empty element gives "".
    pub(crate) fn read_text(&mut self, inside: Tag) -> Result<Cow<'a, str>, RpcError> {
        if self.pending_close.is_none() {
            if let Some(text) = self
                .lexer
                .eat_plain_text_and_end(inside, self.limits.max_string)
            {
                return Ok(Cow::Borrowed(text));
            }
        }
        let mut acc: Option<Cow<'a, str>> = None;
        loop {
            match self.next()? {
                Tok::Text(t) => acc = Some(self.append_text(acc, t)?),
                Tok::Close(t) if t == inside => return Ok(acc.unwrap_or(Cow::Borrowed(""))),
                tok => {
                    let what = format!("text or </{}>", inside.name());
                    return Err(self.unexpected(&tok, &what));
                }
            }
        }
    }

    /// Join a text piece to what came before (text split by a comment or CDATA),
    /// enforcing the string limit on the decoded result.
    pub(crate) fn append_text(
        &self,
        acc: Option<Cow<'a, str>>,
        piece: Cow<'a, str>,
    ) -> Result<Cow<'a, str>, RpcError> {
        let joined = match acc {
            None => piece,
            Some(prev) => Cow::Owned(prev.into_owned() + &piece),
        };
        if joined.len() > self.limits.max_string {
            return Err(RpcError::invalid_request(format_args!(
                "a string of more than {} bytes (limit max_string)",
                self.limits.max_string
            )));
        }
        Ok(joined)
    }

    /// An invalid-request error that says where in the body it happened.
    pub(crate) fn invalid(&self, msg: &str) -> RpcError {
        RpcError::invalid_request(format_args!("{msg} (at byte {})", self.lexer.position()))
    }

    /// "expected X, found Y". Running out of document is malformed XML, so a parse error.
    pub(crate) fn unexpected(&self, found: &Tok<'_>, expected: &str) -> RpcError {
        let found = match found {
            Tok::Open(Tag::Other) => format!("<{}>", self.other_name),
            Tok::Open(t) => format!("<{}>", t.name()),
            Tok::Close(Tag::Other) => "an unknown close tag".to_owned(),
            Tok::Close(t) => format!("</{}>", t.name()),
            Tok::Text(_) => "text".to_owned(),
            Tok::Eof => {
                return RpcError::parse_error(format_args!(
                    "unexpected end of document, expected {expected}"
                ))
            }
        };
        self.invalid(&format!("expected {expected}, found {found}"))
    }
}

/// XML's whitespace (not Unicode's): space, tab, newline, carriage return.
pub(crate) fn is_xml_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Normalize line ends and, for text (not CDATA), resolve `&...;` references.
/// Stays borrowed in the common case of neither, decided by one scan.
#[inline(always)]
fn decode_text(raw: Cow<'_, str>, escaped: bool) -> Result<Cow<'_, str>, RpcError> {
    if memchr::memchr2(b'\r', b'&', raw.as_bytes()).is_none() {
        return Ok(raw);
    }
    decode_text_slow(raw, escaped)
}

fn decode_text_slow(raw: Cow<'_, str>, escaped: bool) -> Result<Cow<'_, str>, RpcError> {
    let raw = if raw.contains('\r') {
        Cow::Owned(normalize_newlines(&raw))
    } else {
        raw
    };
    if !escaped || !raw.contains('&') {
        return Ok(raw);
    }
    let bad = |e| RpcError::parse_error(format_args!("bad text: {e}"));
    match raw {
        Cow::Borrowed(s) => unescape(s).map_err(bad),
        Cow::Owned(s) => unescape(&s)
            .map(|c| Cow::Owned(c.into_owned()))
            .map_err(bad),
    }
}

fn normalize_newlines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('\r') {
        out.push_str(&rest[..i]);
        out.push('\n');
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('\n') {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(doc: &str) -> Vec<String> {
        let mut c = Cursor::new(doc.as_bytes(), &Limits::default()).unwrap();
        let mut out = Vec::new();
        loop {
            match c.next().unwrap() {
                Tok::Text(t) => out.push(t.into_owned()),
                Tok::Eof => return out,
                _ => {}
            }
        }
    }

    #[test]
    fn line_ends_are_normalized_but_char_ref_cr_survives() {
        assert_eq!(texts("<a>x\r\ny\rz&#13;</a>"), ["x\ny\nz\r"]);
        assert_eq!(texts("<a><![CDATA[<\r\n&amp;>]]></a>"), ["<\n&amp;>"]);
    }

    #[test]
    fn empty_element_gives_open_then_close() {
        let mut c = Cursor::new(b"<value/>", &Limits::default()).unwrap();
        assert!(matches!(c.next().unwrap(), Tok::Open(Tag::Value)));
        assert!(matches!(c.next().unwrap(), Tok::Close(Tag::Value)));
        assert!(matches!(c.next().unwrap(), Tok::Eof));
    }

    #[test]
    fn next_markup_skips_only_whitespace() {
        let mut c = Cursor::new(b"<value>\n\t <nil/>\r\n</value>\n", &Limits::default()).unwrap();
        for want in [Tag::Value, Tag::Nil] {
            assert!(matches!(c.next_markup().unwrap(), Tok::Open(t) if t == want));
        }
        assert!(matches!(c.next_markup().unwrap(), Tok::Close(Tag::Nil)));
        assert!(matches!(c.next_markup().unwrap(), Tok::Close(Tag::Value)));
        assert!(matches!(c.next_markup().unwrap(), Tok::Eof));
        let mut c = Cursor::new(b"<value>\n x <nil/></value>", &Limits::default()).unwrap();
        c.next_markup().unwrap();
        assert!(c.next_markup().is_err(), "text between elements is refused");
    }

    #[test]
    fn prefixed_names_match_on_local_part() {
        let mut c = Cursor::new(b"<ex:nil/>", &Limits::default()).unwrap();
        assert!(matches!(c.next().unwrap(), Tok::Open(Tag::Nil)));
    }
}
