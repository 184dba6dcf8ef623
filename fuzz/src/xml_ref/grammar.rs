//! XML-RPC's grammar over [`Tok`]s, written plainly (recursive, one token at a time) from
//! the protocol's definition as docs/protocols.md states it, independently of rpcmux's
//! fast paths:
//!
//! ```text
//! call     := <methodCall> <methodName>text</methodName> [<params> param* </params>] </methodCall>
//! response := <methodResponse> ( <params> param? </params> | <fault> value </fault> ) </methodResponse>
//! param    := <param> value </param>
//! value    := <value> ( text | scalar | array | struct ) </value>     untyped text = string
//! array    := <array> <data> value* </data> </array>  |  <array/>
//! struct   := <struct> ( <member> <name>text</name> value </member> )* </struct>
//! ```
//!
//! Whitespace-only text may stand between elements; a scalar's and a name's text may be
//! split by comments and CDATA. Containers nest at most `MAX_DEPTH` deep (rpcmux's
//! default `max_depth`); the targets give rpcmux no other limit.
use super::scalar;
use super::tag::Tag;
use super::tokens::{Refused, Tok};
use rpcmux_value::{Map, RpcError, Value};

/// rpcmux's default `Limits::max_depth`, which the targets keep.
pub const MAX_DEPTH: usize = 64;

pub struct Grammar {
    toks: Vec<Tok>,
    at: usize,
}

type R<T> = Result<T, Refused>;

fn is_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

impl Grammar {
    pub fn new(toks: Vec<Tok>) -> Self {
        Grammar { toks, at: 0 }
    }

    fn next(&mut self) -> Tok {
        let t = self.toks.get(self.at).cloned().unwrap_or(Tok::Eof);
        self.at += 1;
        t
    }

    /// The next token that is not whitespace; other text is refused.
    fn markup(&mut self) -> R<Tok> {
        loop {
            match self.next() {
                Tok::Text(t) if is_space(&t) => continue,
                Tok::Text(t) => return Err(format!("text {t:?} between elements")),
                t => return Ok(t),
            }
        }
    }

    fn open(&mut self, want: Tag) -> R<()> {
        match self.markup()? {
            Tok::Open(t) if t == want => Ok(()),
            t => Err(format!("expected <{want:?}>, found {t:?}")),
        }
    }

    fn close(&mut self, want: Tag) -> R<()> {
        match self.markup()? {
            Tok::Close(t) if t == want => Ok(()),
            t => Err(format!("expected </{want:?}>, found {t:?}")),
        }
    }

    fn root(&mut self, want: Tag) -> R<()> {
        self.open(want)
    }

    fn eof(&mut self) -> R<()> {
        match self.markup()? {
            Tok::Eof => Ok(()),
            t => Err(format!("{t:?} after the root")),
        }
    }

    /// A text-only element's content, through its close tag.
    fn text(&mut self, inside: Tag) -> R<String> {
        let mut acc = String::new();
        loop {
            match self.next() {
                Tok::Text(t) => acc.push_str(&t),
                Tok::Close(t) if t == inside => return Ok(acc),
                t => return Err(format!("{t:?} inside <{inside:?}>")),
            }
        }
    }

    pub fn call(mut self) -> R<(String, Vec<Value>)> {
        self.root(Tag::MethodCall)?;
        self.open(Tag::MethodName)?;
        let method = self.text(Tag::MethodName)?.trim().to_owned();
        if method.is_empty() {
            return Err("empty method name".into());
        }
        let params = match self.markup()? {
            Tok::Open(Tag::Params) => {
                let p = self.params()?;
                self.close(Tag::MethodCall)?;
                p
            }
            Tok::Close(Tag::MethodCall) => Vec::new(),
            t => return Err(format!("{t:?} after the method name")),
        };
        self.eof()?;
        Ok((method, params))
    }

    pub fn response(mut self) -> R<Result<Value, RpcError>> {
        self.root(Tag::MethodResponse)?;
        let out = match self.markup()? {
            Tok::Open(Tag::Params) => {
                let mut p = self.params()?;
                if p.len() > 1 {
                    return Err("more than one param in a response".into());
                }
                Ok(p.pop().unwrap_or(Value::Nil))
            }
            Tok::Open(Tag::Fault) => {
                self.open(Tag::Value)?;
                let v = self.value(0)?;
                self.close(Tag::Fault)?;
                Err(fault(v)?)
            }
            t => return Err(format!("{t:?} in a response")),
        };
        self.close(Tag::MethodResponse)?;
        self.eof()?;
        Ok(out)
    }

    fn params(&mut self) -> R<Vec<Value>> {
        let mut out = Vec::new();
        loop {
            match self.markup()? {
                Tok::Open(Tag::Param) => {
                    self.open(Tag::Value)?;
                    out.push(self.value(0)?);
                    self.close(Tag::Param)?;
                }
                Tok::Close(Tag::Params) => return Ok(out),
                t => return Err(format!("{t:?} in <params>")),
            }
        }
    }

    /// After `<value>`, through `</value>`; `depth` containers enclose it.
    fn value(&mut self, depth: usize) -> R<Value> {
        let mut text = String::new();
        let tag = loop {
            match self.next() {
                Tok::Text(t) => text.push_str(&t),
                Tok::Close(Tag::Value) => return Ok(Value::from(text)),
                Tok::Open(tag) if is_space(&text) => break tag,
                t => return Err(format!("{t:?} in <value> after {text:?}")),
            }
        };
        let v = match tag {
            Tag::Array => match self.markup()? {
                Tok::Open(Tag::Data) => {
                    deeper(depth)?;
                    let mut items = Vec::new();
                    loop {
                        match self.markup()? {
                            Tok::Open(Tag::Value) => items.push(self.value(depth + 1)?),
                            Tok::Close(Tag::Data) => break,
                            t => return Err(format!("{t:?} in <data>")),
                        }
                    }
                    self.close(Tag::Array)?;
                    Value::Array(items)
                }
                Tok::Close(Tag::Array) => Value::Array(Vec::new()),
                t => return Err(format!("{t:?} in <array>")),
            },
            Tag::Struct => {
                deeper(depth)?;
                let mut map = Map::new();
                loop {
                    match self.markup()? {
                        Tok::Open(Tag::Member) => {
                            self.open(Tag::Name)?;
                            let name = self.text(Tag::Name)?;
                            self.open(Tag::Value)?;
                            let v = self.value(depth + 1)?;
                            map.insert(name, v);
                            self.close(Tag::Member)?;
                        }
                        Tok::Close(Tag::Struct) => break,
                        t => return Err(format!("{t:?} in <struct>")),
                    }
                }
                Value::Struct(Box::new(map))
            }
            t if t.is_scalar() => {
                let text = self.text(t)?;
                scalar::decode(t, &text)?
            }
            t => return Err(format!("<{t:?}> as a value's type")),
        };
        self.close(Tag::Value)?;
        Ok(v)
    }
}

fn deeper(depth: usize) -> R<()> {
    if depth >= MAX_DEPTH {
        return Err("nested too deep".into());
    }
    Ok(())
}

/// A fault's struct: an int `faultCode` (a numeric string forgiven), an optional
/// `faultString` (a non-string one shown by its `Debug` form).
fn fault(v: Value) -> R<RpcError> {
    let Value::Struct(m) = v else {
        return Err("a fault that is no struct".into());
    };
    let code = match m.get("faultCode") {
        Some(Value::Int(c)) => *c,
        Some(Value::String(s)) => s.trim().parse().map_err(|_| "a non-numeric faultCode")?,
        _ => return Err("no int faultCode".into()),
    };
    let message = match m.get("faultString") {
        Some(Value::String(s)) => s.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    };
    Ok(RpcError::new(code, message))
}
