//! `<value>…</value>` → [`Value`], straight from the token stream (no DOM).
//!
//! The parser is iterative: open arrays and structs live on an explicit stack, so
//! hostile nesting costs heap bounded by [`Limits::max_depth`](crate::Limits), never
//! the thread's stack, whatever the limit is set to.
//!
//! Grammar accepted (whitespace, comments and PIs allowed between elements):
//! ```text
//! value  := <value> ( text | scalar | array | struct ) </value>   untyped text = string
//! scalar := <int|i4|i8|boolean|string|double|dateTime.iso8601|base64|nil|ex:…> text </…>
//! array  := <array> <data> value* </data> </array>                also <array/>
//! struct := <struct> ( <member> <name>text</name> value </member> )* </struct>
//! ```

use crate::cursor::{is_xml_space, Cursor, Tok};
use crate::scalar;
use crate::tag::Tag;
use rpcmux_value::{Gather, RpcError, Str, Value};
use std::borrow::Cow;

/// A container still being filled.
pub(crate) enum Frame {
    Array(Vec<Value>),
    /// The members so far (made into a map of their number when the struct closes) and
    /// the name of the member whose value is being read.
    Struct(Gather, Str),
}

/// What the inside of one `<value>` turned out to be.
pub(crate) enum Body {
    /// A scalar, or an empty array; its `</value>` has been read.
    Done(Value),
    /// An array or struct was opened; its children come next.
    Open(Frame),
}

/// Read one value. The caller has just read `<value>`; this reads through `</value>`.
pub(crate) fn read_value(cur: &mut Cursor<'_>) -> Result<Value, RpcError> {
    let mut stack: Vec<Frame> = Vec::new();
    'value: loop {
        // Just inside a `<value>` (the outermost one, or a child of the top frame).
        let mut done = match read_body(cur)? {
            Body::Done(v) => Some(v),
            Body::Open(frame) => {
                if stack.len() >= cur.limits().max_depth {
                    return Err(cur.invalid(&format!(
                        "arrays/structs nested more than {} deep (limit max_depth)",
                        cur.limits().max_depth
                    )));
                }
                stack.push(frame);
                None
            }
        };
        // Hand finished values to their parents and look for the parent's next child,
        // until a child `<value>` opens (back to the top) or the outermost one closes.
        loop {
            let Some(top) = stack.last_mut() else {
                // Only reachable with `done` set: an empty stack means no container is open.
                return done.ok_or_else(|| RpcError::internal("xmlrpc: value lost"));
            };
            if let Some(v) = done.take() {
                match top {
                    Frame::Array(items) => items.push(v),
                    Frame::Struct(members, name) => {
                        members.push(std::mem::take(name), v);
                        cur.expect_close(Tag::Member)?;
                    }
                }
            }
            match top {
                Frame::Array(_) if cur.eat_open(Tag::Value)? => continue 'value,
                Frame::Array(_) if cur.eat_close(Tag::Data) => cur.expect_close(Tag::Array)?,
                Frame::Array(_) => match cur.next_markup()? {
                    Tok::Open(Tag::Value) => continue 'value,
                    Tok::Close(Tag::Data) => cur.expect_close(Tag::Array)?,
                    tok => return Err(cur.unexpected(&tok, "<value> or </data>")),
                },
                Frame::Struct(_, name) if cur.eat_open(Tag::Member)? => {
                    read_member_name(cur, name)?;
                    continue 'value;
                }
                Frame::Struct(_, _) if cur.eat_close(Tag::Struct) => {}
                Frame::Struct(_, name) => match cur.next_markup()? {
                    Tok::Open(Tag::Member) => {
                        read_member_name(cur, name)?;
                        continue 'value;
                    }
                    Tok::Close(Tag::Struct) => {}
                    tok => return Err(cur.unexpected(&tok, "<member> or </struct>")),
                },
            }
            // The top container has closed; the `</value>` around it follows.
            cur.expect_close(Tag::Value)?;
            done = stack.pop().map(|frame| match frame {
                Frame::Array(items) => Value::Array(items),
                Frame::Struct(members, _) => Value::Struct(Box::new(members.into_map())),
            });
        }
    }
}

/// After `<member>`: `<name>text</name><value>`, the name into `name`.
pub(crate) fn read_member_name(cur: &mut Cursor<'_>, name: &mut Str) -> Result<(), RpcError> {
    *name = Str::from(member_name(cur)?);
    Ok(())
}

/// After `<member>`: `<name>text</name><value>`; the name, borrowed from the document
/// when it has no references (a typed reader matches it without allocating).
pub(crate) fn member_name<'a>(cur: &mut Cursor<'a>) -> Result<Cow<'a, str>, RpcError> {
    cur.expect_open(Tag::Name)?;
    let name = cur.read_text(Tag::Name)?;
    cur.expect_open(Tag::Value)?;
    Ok(name)
}

/// Read what follows a `<value>`: untyped text up to `</value>`, a scalar element and
/// `</value>`, or the opening of an array (through `<data>`) or struct.
pub(crate) fn read_body(cur: &mut Cursor<'_>) -> Result<Body, RpcError> {
    // The commonest value of all, `<value><string>text</string></value>`, without
    // lexing and classifying its start tag.
    if cur.eat_open_here(Tag::String)? {
        return open_typed(cur, Tag::String);
    }
    let mut text: Option<Cow<'_, str>> = None;
    loop {
        match cur.next()? {
            Tok::Text(t) => text = Some(cur.append_text(text, t)?),
            // `<value>abc</value>`, `<value></value>` and `<value/>` are all strings.
            Tok::Close(Tag::Value) => {
                return Ok(Body::Done(Value::String(
                    text.map(Str::from).unwrap_or_default(),
                )))
            }
            Tok::Open(tag) => {
                // Indentation before a typed element is not content; anything else is.
                if text.as_deref().is_some_and(|t| !is_xml_space(t)) {
                    return Err(cur.invalid("text mixed with a typed element in <value>"));
                }
                return open_typed(cur, tag);
            }
            tok => return Err(cur.unexpected(&tok, "a type element, text or </value>")),
        }
    }
}

fn open_typed(cur: &mut Cursor<'_>, tag: Tag) -> Result<Body, RpcError> {
    match tag {
        Tag::Array => match cur.next_markup()? {
            Tok::Open(Tag::Data) => Ok(Body::Open(Frame::Array(Vec::new()))),
            // `<array/>`: no `<data>` at all. Lenient; some writers emit it for [].
            Tok::Close(Tag::Array) => {
                cur.expect_close(Tag::Value)?;
                Ok(Body::Done(Value::Array(Vec::new())))
            }
            tok => Err(cur.unexpected(&tok, "<data>")),
        },
        Tag::Struct => Ok(Body::Open(Frame::Struct(Gather::new(), Str::default()))),
        t if t.is_scalar() => {
            let text = cur.read_text(t)?;
            let v = scalar::decode(t, text)?;
            cur.expect_close(Tag::Value)?;
            Ok(Body::Done(v))
        }
        t => Err(cur.unexpected(&Tok::Open(t), "a type element")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use rpcmux_value::vstruct;

    fn parse(doc: &str) -> Result<Value, RpcError> {
        parse_with(doc, &Limits::default())
    }

    fn parse_with(doc: &str, limits: &Limits) -> Result<Value, RpcError> {
        let mut cur = Cursor::new(doc.as_bytes(), limits)?;
        cur.expect_root(Tag::Value)?;
        let v = read_value(&mut cur)?;
        cur.expect_eof()?;
        Ok(v)
    }

    #[test]
    fn untyped_and_empty_values_are_strings() {
        assert_eq!(parse("<value>a b</value>").unwrap(), Value::from("a b"));
        assert_eq!(parse("<value>  </value>").unwrap(), Value::from("  "));
        assert_eq!(parse("<value></value>").unwrap(), Value::from(""));
        assert_eq!(parse("<value/>").unwrap(), Value::from(""));
        assert_eq!(parse("<value><string/></value>").unwrap(), Value::from(""));
        assert_eq!(
            parse("<value>a<!-- c -->b<![CDATA[<c>]]></value>").unwrap(),
            Value::from("ab<c>")
        );
    }

    #[test]
    fn indented_values_and_typed_whitespace() {
        let doc = "<value>\n  <struct>\n    <member>\n      <name>k</name>\n      \
                   <value>\n        <i4> 5 </i4>\n      </value>\n    </member>\n  \
                   </struct>\n</value>";
        assert_eq!(parse(doc).unwrap(), vstruct! {"k" => 5});
        // Whitespace inside <string> is content.
        assert_eq!(
            parse("<value><string> x </string></value>").unwrap(),
            Value::from(" x ")
        );
    }

    #[test]
    fn containers_nest_and_keep_order() {
        let doc = "<value><array><data><value><struct><member><name>z</name><value>\
                   <array><data/></array></value></member><member><name>a</name><value>\
                   <nil/></value></member></struct></value><value><array/></value>\
                   <value><struct/></value></data></array></value>";
        let v = parse(doc).unwrap();
        let inner = vstruct! {"z" => Value::Array(vec![]), "a" => Value::Nil};
        assert_eq!(
            v,
            Value::Array(vec![
                inner,
                Value::Array(vec![]),
                Value::Struct(Box::default())
            ])
        );
        let keys: Vec<_> = v.as_array().unwrap()[0]
            .as_struct()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["z", "a"]);
    }

    #[test]
    fn apache_extension_types() {
        let doc = "<value xmlns:ex=\"http://ws.apache.org/xmlrpc/namespaces/extensions\">\
                   <array><data>\
                   <value><ex:nil/></value><value><ex:i8>-5000000000</ex:i8></value>\
                   <value><ex:i1>-3</ex:i1></value><value><ex:i2>300</ex:i2></value>\
                   <value><ex:float>1.5</ex:float></value>\
                   <value><ex:biginteger>12</ex:biginteger></value>\
                   <value><ex:bigdecimal>0.25</ex:bigdecimal></value>\
                   </data></array></value>";
        assert_eq!(
            parse(doc).unwrap(),
            Value::Array(vec![
                Value::Nil,
                Value::Int(-5_000_000_000),
                Value::Int(-3),
                Value::Int(300),
                Value::Double(1.5),
                Value::Int(12),
                Value::Double(0.25),
            ])
        );
    }

    #[test]
    fn structure_errors_are_invalid_requests() {
        for doc in [
            "<value>x<int>1</int></value>",
            "<value><int>1</int>x</value>",
            "<value><foo>1</foo></value>",
            "<value><int><i4>1</i4></int></value>",
            "<value><array><value/></array></value>",
            "<value><struct><value/></struct></value>",
            "<value><struct><member><value/><name>a</name></member></struct></value>",
            "<value><struct><member><name>a</name></member></struct></value>",
            "<value><array><data><int>1</int></data></array></value>",
            "<value><int>1</int><int>2</int></value>",
        ] {
            let err = parse(doc).unwrap_err();
            assert_eq!(err.code, RpcError::INVALID_REQUEST, "{doc}: {err}");
        }
    }

    #[test]
    fn depth_limit_counts_containers() {
        let nest = |n: usize| {
            "<value><array><data>".repeat(n)
                + "<value>1</value>"
                + &"</data></array></value>".repeat(n)
        };
        let limits = Limits {
            max_depth: 3,
            ..Limits::default()
        };
        assert!(parse_with(&nest(3), &limits).is_ok());
        let err = parse_with(&nest(4), &limits).unwrap_err();
        assert_eq!(err.code, RpcError::INVALID_REQUEST);
        assert!(err.message.contains("max_depth"), "{err}");
    }

    #[test]
    fn element_and_string_limits() {
        let limits = Limits {
            max_elements: 4,
            max_string: 5,
            ..Limits::default()
        };
        let ok = "<value><array><data><value>12345</value></data></array></value>";
        assert!(parse_with(ok, &limits).is_ok());
        let err = parse_with("<value>123456</value>", &limits).unwrap_err();
        assert!(err.message.contains("max_string"), "{err}");
        let err = parse_with("<value><string>12<!---->3456</string></value>", &limits).unwrap_err();
        assert!(err.message.contains("max_string"), "{err}");
        let many = "<value><array><data><value/><value/><value/></data></array></value>";
        let err = parse_with(many, &limits).unwrap_err();
        assert!(err.message.contains("max_elements"), "{err}");
    }
}
