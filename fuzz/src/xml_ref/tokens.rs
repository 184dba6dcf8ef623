//! A document → XML-RPC's tokens, through quick-xml, plus the XML rules quick-xml
//! leaves to its caller. The rules applied here are the reference's half of the
//! contract in docs/protocols.md ("XML-RPC's XML subset"):
//!
//! - UTF-8 only, one leading BOM skipped (quick-xml would skip a second one, which is
//!   text before the root to XML); every character, raw or as a reference, one
//!   XML 1.0 allows (its `Char` production);
//! - line ends normalised (`\r\n` and `\r` → `\n`) before references are resolved, so a
//!   raw CR never survives and `&#13;` does, in text and CDATA alike;
//! - any `<!DOCTYPE>` refused (XML-RPC's rule, not XML's: no entity is ever declared);
//! - only the five predefined entities and character references;
//! - attributes must be well-formed `name="value"` / `name='value'`, each after
//!   whitespace (quick-xml takes `a='1'b='2'`), with no `<` in the value; they are
//!   then skipped (their references are not decoded, repeats allowed);
//! - a name must not be empty, start with a digit, `-` or `.`, or hold a character that
//!   ends a name in rpcmux's lexer (`/ < = " ' &`). XML's full name grammar is not
//!   applied: only XML-RPC's own names mean anything, and the grammar refuses others;
//! - a processing instruction needs a target right after `<?` (quick-xml itself refuses
//!   `<?>`, and reports `<? x?>` with an empty target);
//! - comments, processing instructions and the declaration are skipped wherever they
//!   appear (XML allows the declaration only first; rpcmux and this reader do not care).
use super::tag::Tag;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// One token: an element opened or closed (its class), or decoded character data.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Open(Tag),
    Close(Tag),
    Text(String),
    Eof,
}

/// Why the reference refused a document (the reason is for divergence reports only).
pub type Refused = String;

/// The whole document as tokens, or why it is not XML-RPC's XML.
pub fn tokens(body: &[u8]) -> Result<Vec<Tok>, Refused> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let doc = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    if doc.starts_with('\u{feff}') {
        return Err("U+FEFF (a second BOM) before the root".into());
    }
    if let Some(c) = doc.chars().find(|&c| !is_xml_char(c)) {
        return Err(format!("U+{:04X} is no XML 1.0 character", u32::from(c)));
    }
    let mut reader = Reader::from_str(doc);
    let config = reader.config_mut();
    config.trim_text(false);
    config.check_end_names = true;
    config.expand_empty_elements = false;
    let mut out = Vec::new();
    loop {
        match reader.read_event().map_err(|e| e.to_string())? {
            Event::Start(e) => out.push(Tok::Open(start_tag(&e)?)),
            Event::Empty(e) => {
                let tag = start_tag(&e)?;
                out.extend([Tok::Open(tag), Tok::Close(tag)]);
            }
            Event::End(e) => out.push(Tok::Close(Tag::from_name(e.name().as_ref()))),
            Event::Text(t) => out.push(Tok::Text(text(&t, true)?)),
            Event::CData(t) => out.push(Tok::Text(text(&t, false)?)),
            Event::PI(pi) if pi.target().is_empty() => {
                return Err("a processing instruction without a target".into())
            }
            Event::Comment(_) | Event::PI(_) | Event::Decl(_) => {}
            Event::DocType(_) => return Err("a DTD".into()),
            Event::Eof => {
                out.push(Tok::Eof);
                return Ok(out);
            }
        }
    }
}

/// XML 1.0's `Char`: TAB, LF, CR and everything from U+0020 but U+FFFE / U+FFFF.
pub fn is_xml_char(c: char) -> bool {
    !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

fn check_name(name: &[u8]) -> Result<(), Refused> {
    let bad_start = |b: &u8| b.is_ascii_digit() || matches!(b, b'-' | b'.');
    match name.first() {
        None => Err("an empty name".into()),
        Some(b) if bad_start(b) => Err("a name starting with a digit, '-' or '.'".into()),
        _ if name.iter().any(|b| b"/<=\"'&".contains(b)) => Err("markup in a name".into()),
        _ => Ok(()),
    }
}

fn start_tag(e: &BytesStart<'_>) -> Result<Tag, Refused> {
    check_name(e.name().as_ref())?;
    let mut attrs = e.attributes();
    attrs.with_checks(false);
    if !spaced(e.attributes_raw()) {
        return Err("an attribute without whitespace before it".into());
    }
    for a in attrs {
        let a = a.map_err(|e| e.to_string())?;
        check_name(a.key.as_ref())?;
        if a.value.contains(&b'<') {
            return Err("'<' in an attribute value".into());
        }
    }
    Ok(Tag::from_name(e.name().as_ref()))
}

/// Whether every attribute in a start tag's attribute text (quick-xml has checked its
/// form) has whitespace before it, as XML's `(S Attribute)*` requires.
fn spaced(raw: &[u8]) -> bool {
    let is_space = |b: &u8| b" \t\r\n".contains(b);
    let mut rest = raw;
    loop {
        let trimmed = rest
            .iter()
            .position(|b| !is_space(b))
            .map_or(&[][..], |i| &rest[i..]);
        if trimmed.is_empty() {
            return true;
        }
        if trimmed.len() == rest.len() {
            return false;
        }
        // name, '=', quoted value: skip to the value's closing quote.
        let Some(q) = trimmed.iter().position(|&b| b == b'"' || b == b'\'') else {
            return true;
        };
        let Some(end) = trimmed[q + 1..].iter().position(|&b| b == trimmed[q]) else {
            return true;
        };
        rest = &trimmed[q + 1 + end + 1..];
    }
}

/// Character data: line ends normalised, then (text only, not CDATA) references resolved.
fn text(raw: &[u8], escaped: bool) -> Result<String, Refused> {
    let raw = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
    let normal = raw.replace("\r\n", "\n").replace('\r', "\n");
    if !escaped {
        return Ok(normal);
    }
    let decoded = quick_xml::escape::unescape(&normal).map_err(|e| e.to_string())?;
    match decoded.chars().find(|&c| !is_xml_char(c)) {
        Some(c) => Err(format!("a reference to U+{:04X}", u32::from(c))),
        None => Ok(decoded.into_owned()),
    }
}
