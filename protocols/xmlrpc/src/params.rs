//! A `<methodCall>`'s params read straight into a Rust type (serde), with no value tree
//! for its arrays and structs: what a typed verb's parameters are read with.
//!
//! It reads what the tree reader reads, with the same cursor and limits: each scalar is
//! decoded by the same code into a [`Value`], whose own deserializer then hands it to
//! the type, so every scalar (dates, base64, Apache's `ex:` forms, lenient spellings)
//! means exactly what it means in the tree; arrays and structs are streamed to the
//! type's visitor. It is the fast path only: any failure (malformed XML, a type that
//! does not match, a parameter count other than the type's, a level past `max_depth`)
//! is an [`Error`] saying nothing more, and the caller reads the call as values
//! ([`parse_call`](crate::parse_call)) for the error the client gets, so each error
//! has one source.

use crate::cursor::{Cursor, Tok};
use crate::read::read_method_name;
use crate::read_value::{member_name, read_body, Body, Frame};
use crate::tag::Tag;
use crate::Limits;
use rpcmux_value::{RpcError, Str, Value};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use std::fmt;

/// Why the params could not be read straight into the type (see the module docs: the
/// caller reads the call as values for the client's error).
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

impl From<RpcError> for Error {
    fn from(e: RpcError) -> Self {
        Error(e.message)
    }
}

impl From<rpcmux_value::ValueError> for Error {
    fn from(e: rpcmux_value::ValueError) -> Self {
        Error(e.0)
    }
}

/// A `<methodCall>` opened up to its params: a serde [`Deserializer`] (through
/// `&mut`) of the params as a sequence, one item per `<param>`.
///
/// ```
/// use serde::Deserialize;
/// let body = b"<methodCall><methodName>add</methodName><params>\
///     <param><value><int>2</int></value></param>\
///     <param><value><int>3</int></value></param></params></methodCall>";
/// let limits = rpcmux_xmlrpc::Limits::default();
/// let mut call = rpcmux_xmlrpc::CallParams::open(body, &limits).unwrap();
/// assert_eq!(call.method(), "add");
/// let (a, b) = <(i64, i64)>::deserialize(&mut call).unwrap();
/// call.finish().unwrap();
/// assert_eq!(a + b, 5);
/// ```
pub struct CallParams<'a> {
    cur: Cursor<'a>,
    method: Str,
    /// `<params>` was opened and is not closed yet.
    open: bool,
}

impl<'a> CallParams<'a> {
    /// Read `body` through its `<methodName>` and the `<params>` tag.
    pub fn open(body: &'a [u8], limits: &Limits) -> Result<Self, Error> {
        let mut cur = Cursor::new(body, limits)?;
        let method = read_method_name(&mut cur)?;
        let open = match cur.next_markup()? {
            Tok::Open(Tag::Params) => true,
            Tok::Close(Tag::MethodCall) => false,
            _ => return Err(Error("neither <params> nor </methodCall>".into())),
        };
        Ok(CallParams { cur, method, open })
    }

    /// The called method's name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Check that the document ends as a call must, once the params were read.
    pub fn finish(mut self) -> Result<(), Error> {
        if self.open {
            return Err(Error("params left unread".into()));
        }
        self.cur.expect_eof()?;
        Ok(())
    }

    /// After the last param was read: `</params>`, `</methodCall>`.
    fn close(&mut self) -> Result<(), Error> {
        self.open = false;
        self.cur.expect_close(Tag::MethodCall)?;
        Ok(())
    }
}

impl<'de> Deserializer<'de> for &mut CallParams<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let depth = self.cur.limits().max_depth;
        let out = v.visit_seq(Params {
            call: &mut *self,
            depth,
        })?;
        if self.open {
            // More params than the type reads.
            return match self.cur.next_markup()? {
                Tok::Close(Tag::Params) => {
                    self.close()?;
                    Ok(out)
                }
                _ => Err(Error("more params than the type takes".into())),
            };
        }
        Ok(out)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct
        map struct enum identifier ignored_any
    }
}

/// The params, one `<param>` each.
struct Params<'c, 'a> {
    call: &'c mut CallParams<'a>,
    depth: usize,
}

impl<'de> de::SeqAccess<'de> for Params<'_, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        if !self.call.open {
            return Ok(None);
        }
        let cur = &mut self.call.cur;
        match cur.next_markup()? {
            Tok::Open(Tag::Param) => {
                cur.expect_open(Tag::Value)?;
                let v = seed.deserialize(ValueDe {
                    cur: &mut *cur,
                    depth: self.depth,
                })?;
                self.call.cur.expect_close(Tag::Param)?;
                Ok(Some(v))
            }
            Tok::Close(Tag::Params) => {
                self.call.close()?;
                Ok(None)
            }
            _ => Err(Error("neither <param> nor </params>".into())),
        }
    }
}

/// One value, just after its `<value>`; `depth`: arrays and structs it may still open.
struct ValueDe<'c, 'a> {
    cur: &'c mut Cursor<'a>,
    depth: usize,
}

impl<'c, 'a> ValueDe<'c, 'a> {
    /// What the value holds: a scalar (read through its `</value>`), or an opened
    /// container.
    fn start(self) -> Result<Result<Value, Opened<'c, 'a>>, Error> {
        match read_body(self.cur)? {
            Body::Done(v) => Ok(Ok(v)),
            Body::Open(frame) => {
                let depth = self
                    .depth
                    .checked_sub(1)
                    .ok_or_else(|| Error("too deep".into()))?;
                let kind = match frame {
                    Frame::Array(_) => Kind::Array,
                    Frame::Struct(..) => Kind::Struct,
                };
                Ok(Err(Opened {
                    cur: self.cur,
                    depth,
                    kind,
                }))
            }
        }
    }
}

/// Each method: a scalar goes to [`Value`]'s own deserializer (the tree's meaning), a
/// container to [`Opened`].
macro_rules! by_start {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* v: V) -> Result<V::Value, Error> {
                match self.start()? {
                    Ok(scalar) => Ok(scalar.$method($($arg,)* v)?),
                    Err(opened) => opened.$method($($arg,)* v),
                }
            }
        )*
    };
}

impl<'de> Deserializer<'de> for ValueDe<'_, '_> {
    type Error = Error;

    by_start! {
        deserialize_any();
        deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
        deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16();
        deserialize_u32(); deserialize_u64(); deserialize_u128(); deserialize_f32();
        deserialize_f64(); deserialize_char(); deserialize_str(); deserialize_string();
        deserialize_bytes(); deserialize_byte_buf(); deserialize_option();
        deserialize_unit(); deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str); deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize); deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier(); deserialize_ignored_any();
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Array,
    Struct,
}

/// An array (after its `<data>`) or a struct (after `<struct>`), streamed to the
/// visitor as a sequence or a map, as [`Value`]'s deserializer visits them.
struct Opened<'c, 'a> {
    cur: &'c mut Cursor<'a>,
    depth: usize,
    kind: Kind,
}

impl<'de> Deserializer<'de> for Opened<'_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let Opened { cur, depth, kind } = self;
        let out = match kind {
            Kind::Array => {
                let mut items = Items {
                    cur: &mut *cur,
                    depth,
                    open: true,
                };
                let out = v.visit_seq(&mut items)?;
                // A visitor that took what it wanted (a tuple) has not seen the end.
                if items.open {
                    match cur.next_markup()? {
                        Tok::Close(Tag::Data) => cur.expect_close(Tag::Array)?,
                        _ => return Err(Error("array items left unread".into())),
                    }
                }
                out
            }
            Kind::Struct => {
                let mut members = Members {
                    cur: &mut *cur,
                    depth,
                    open: true,
                };
                let out = v.visit_map(&mut members)?;
                if members.open {
                    match cur.next_markup()? {
                        Tok::Close(Tag::Struct) => {}
                        _ => return Err(Error("struct members left unread".into())),
                    }
                }
                out
            }
        };
        cur.expect_close(Tag::Value)?;
        Ok(out)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    /// A one-member struct naming a variant: left to the tree.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _v: V,
    ) -> Result<V::Value, Error> {
        Err(Error("an enum from a container".into()))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

/// An array's items, through `</data></array>`.
struct Items<'c, 'a> {
    cur: &'c mut Cursor<'a>,
    depth: usize,
    open: bool,
}

impl<'de> de::SeqAccess<'de> for &mut Items<'_, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        if !self.open {
            return Ok(None);
        }
        if !self.cur.eat_open(Tag::Value)? {
            match self.cur.next_markup()? {
                Tok::Open(Tag::Value) => {}
                Tok::Close(Tag::Data) => {
                    self.cur.expect_close(Tag::Array)?;
                    self.open = false;
                    return Ok(None);
                }
                _ => return Err(Error("neither <value> nor </data>".into())),
            }
        }
        seed.deserialize(ValueDe {
            cur: &mut *self.cur,
            depth: self.depth,
        })
        .map(Some)
    }
}

/// A struct's members, through `</struct>`; each name is a borrowed or owned string
/// key, as in the tree.
struct Members<'c, 'a> {
    cur: &'c mut Cursor<'a>,
    depth: usize,
    open: bool,
}

impl<'de> de::MapAccess<'de> for &mut Members<'_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if !self.open {
            return Ok(None);
        }
        if !self.cur.eat_open(Tag::Member)? {
            match self.cur.next_markup()? {
                Tok::Open(Tag::Member) => {}
                Tok::Close(Tag::Struct) => {
                    self.open = false;
                    return Ok(None);
                }
                _ => return Err(Error("neither <member> nor </struct>".into())),
            }
        }
        // The name as `&str` (visit_str): a struct's field is matched without allocating.
        let name = member_name(self.cur)?;
        let key: de::value::StrDeserializer<Error> = name.as_ref().into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let v = seed.deserialize(ValueDe {
            cur: &mut *self.cur,
            depth: self.depth,
        })?;
        self.cur.expect_close(Tag::Member)?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::{DateTime, Map};
    use serde::de::DeserializeOwned;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    /// `T` from the call's params read as values (the tree), and read straight.
    fn both<T: DeserializeOwned>(body: &[u8]) -> (Result<T, String>, Result<T, String>) {
        let limits = Limits::default();
        let tree = crate::parse_call(body, &limits)
            .map_err(|e| e.message)
            .and_then(|c| T::deserialize(Value::Array(c.params)).map_err(|e| e.0));
        let direct = CallParams::open(body, &limits).and_then(|mut call| {
            let t = T::deserialize(&mut call)?;
            call.finish()?;
            Ok(t)
        });
        (tree, direct.map_err(|e| e.0))
    }

    /// Read straight, `T` is what the tree makes of the same document; and whatever
    /// the tree refuses is refused here too. Returns whether it was read straight.
    fn agree<T: DeserializeOwned + fmt::Debug>(body: &[u8]) -> bool {
        let (tree, direct) = both::<T>(body);
        match (&tree, &direct) {
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (Ok(a), Err(e)) if STRICT.get() => panic!(
                "read as values ({a:?}), not straight: {e}\n{}",
                String::from_utf8_lossy(body)
            ),
            (Err(_), Ok(b)) => panic!(
                "read straight as {b:?}, refused as values: {tree:?}\n{}",
                String::from_utf8_lossy(body)
            ),
            _ => {}
        }
        direct.is_ok()
    }

    thread_local! {
        /// Whether [`agree`] also requires what the tree reads to be read straight.
        static STRICT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Vm {
        id: String,
        mem: Option<i64>,
        #[serde(default)]
        tags: Vec<String>,
        when: Option<String>,
        spec: Option<BTreeMap<String, Value>>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    enum State {
        Up,
        Down(i64),
    }

    fn text(rng: &mut fastrand::Rng) -> String {
        const PIECES: &[&str] = &["a", "<", ">", "&", "\n", "é", "😀", " ", "]]>", "1", "-"];
        (0..rng.usize(0..5))
            .map(|_| PIECES[rng.usize(..PIECES.len())])
            .collect()
    }

    fn value(rng: &mut fastrand::Rng, depth: u32) -> Value {
        match rng.u8(..if depth == 0 { 8 } else { 11 }) {
            0 => Value::Nil,
            1 => Value::Bool(rng.bool()),
            2 => Value::Int(if rng.bool() {
                rng.i64(-3..3)
            } else {
                rng.i64(..)
            }),
            3 => Value::Double(match rng.u8(..4) {
                0 => f64::INFINITY,
                1 => -0.5,
                _ => f64::from_bits(rng.u64(..)),
            }),
            4 | 5 => Value::String(match rng.u8(..4) {
                0 => ["id", "mem", "tags", "Up", "Down"][rng.usize(..5)].into(),
                _ => text(rng).into(),
            }),
            6 => Value::Bytes((0..rng.usize(..5)).map(|_| rng.u8(..)).collect()),
            7 => Value::DateTime(DateTime::parse("20261204T15:22:47").unwrap()),
            8 => Value::Array((0..rng.usize(..4)).map(|_| value(rng, depth - 1)).collect()),
            _ => {
                let mut m = Map::default();
                for _ in 0..rng.usize(..4) {
                    let k = match rng.u8(..3) {
                        0 => ["id", "mem", "tags", "when", "spec", "Down"][rng.usize(..6)].into(),
                        _ => text(rng),
                    };
                    m.insert(k, value(rng, depth - 1));
                }
                Value::Struct(Box::new(m))
            }
        }
    }

    /// Random calls, read as several types: where the straight read succeeds it
    /// agrees with the tree, and it succeeds for every call the tree reads as
    /// `Vec<Value>` (any params at all).
    #[test]
    fn reads_what_the_tree_reads_for_random_calls() {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut straight = 0;
        for _ in 0..3000 {
            let params: Vec<Value> = (0..rng.usize(..4)).map(|_| value(&mut rng, 3)).collect();
            let mut body = Vec::new();
            crate::write_call(&mut body, "m", &params);
            // What the tree reads is read straight too (no duplicate member names
            // here: a map holds each once), but for enums from a struct.
            STRICT.set(true);
            assert!(
                agree::<Vec<Value>>(&body),
                "{}",
                String::from_utf8_lossy(&body)
            );
            agree::<(Value,)>(&body);
            agree::<(String, Option<i64>)>(&body);
            agree::<Vec<Option<Vec<String>>>>(&body);
            agree::<Vec<BTreeMap<String, Value>>>(&body);
            agree::<Vec<(Value, String)>>(&body);
            agree::<(bool, f64, Vec<u8>)>(&body);
            straight += usize::from(agree::<(Vm,)>(&body));
            STRICT.set(false);
            agree::<Vec<State>>(&body);
        }
        assert!(straight > 0, "some calls read straight as a struct");
    }

    #[test]
    fn hand_written_forms_read_as_in_the_tree() {
        let call = |params: &str| {
            format!(
                "<?xml version=\"1.0\"?>\n<methodCall>\n <methodName> m </methodName>\n\
                 <params>{params}</params></methodCall>\n"
            )
        };
        let vm = call(
            "<param><value><struct>\n<member><name>id</name><value>v1</value></member>\
             <member><name>mem</name><value><i4> 5 </i4></value></member>\
             <member><name>tags</name><value><array><data><value><string>a</string></value>\
             <value>b<!-- c --></value></data></array></value></member>\
             <member><name>spec</name><value><struct/></value></member>\
             <member><name>when</name><value><dateTime.iso8601>20261204T15:22:47\
             </dateTime.iso8601></value></member></struct></value></param>",
        );
        assert!(agree::<(Vm,)>(vm.as_bytes()));
        let ex = call(
            "<param><value xmlns:ex=\"x\"><ex:i8>-5000000000</ex:i8></value></param>\
             <param><value><array/></value></param><param><value><ex:nil/></value></param>",
        );
        assert!(agree::<(i64, Vec<i64>, Option<String>)>(ex.as_bytes()));
        // The tree reads these; the straight read leaves them to it.
        let dup = call(
            "<param><value><struct><member><name>id</name><value>a</value></member>\
             <member><name>id</name><value>b</value></member></struct></value></param>",
        );
        assert!(!agree::<(Vm,)>(dup.as_bytes()));
        assert!(!agree::<(Vm,)>(call("").as_bytes()), "too few params");
        // Refused either way: trailing content, too many params, bad scalars.
        for bad in [
            call("<param><value>1</value></param>") + "<x/>",
            call("<param><value><int>x</int></value></param>"),
            call("<param><value><i4>1</i4><i4>2</i4></value></param>"),
        ] {
            let (tree, direct) = both::<Vec<Value>>(bad.as_bytes());
            assert!(tree.is_err() && direct.is_err(), "{bad}");
        }
        let (_, direct) =
            both::<(i64,)>(call(&"<param><value>1</value></param>".repeat(2)).as_bytes());
        assert!(direct.is_err(), "a param past the type's is not dropped");
    }

    #[test]
    fn depth_is_bounded() {
        let limits = Limits {
            max_depth: 3,
            ..Limits::default()
        };
        let nest = |n: usize| {
            format!(
                "<methodCall><methodName>m</methodName><params><param><value>{}1{}</value>\
                 </param></params></methodCall>",
                "<array><data><value>".repeat(n),
                "</value></data></array>".repeat(n)
            )
        };
        let read = |doc: String| {
            let mut call = CallParams::open(doc.as_bytes(), &limits).unwrap();
            Vec::<Value>::deserialize(&mut call).map(|v| (v, call.finish()))
        };
        assert!(read(nest(3)).is_ok());
        assert!(read(nest(4)).is_err());
    }
}
