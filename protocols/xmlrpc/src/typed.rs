//! Any `serde::Serialize` result → a `<methodResponse>`, written straight into the
//! output buffer: what `rpcmux_value::to_value` followed by
//! [`try_write_response`](crate::try_write_response) writes, byte for byte, without
//! building the `Value` tree in between.
//!
//! The forms a typed result nearly always takes are written here: structs, sequences,
//! string-keyed maps of known length, strings, 64-bit ints, doubles, bools, bytes,
//! `None`/unit, enums. The rest are left to the tree path, which has the rules for them
//! and the exact words of their errors: an int past the 64-bit signed range (the tree
//! writes some of them as doubles), a map key that is not a string (the tree spells it
//! as one), a map of unknown length (`#[serde(flatten)]`, whose keys may repeat and
//! which the tree merges), and any error a type's own `Serialize` raises. For those
//! [`Written::Fallback`] is returned, with `out` as it was.

use crate::escape::escape_into;
use crate::write::{checked, write_base64, write_double, write_int, XML_DECL};
use rpcmux_value::RpcError;
use serde::ser::{self, Serialize};

/// What [`try_write_typed_response`] did.
#[derive(Debug, PartialEq)]
pub enum Written {
    /// The response is in `out`.
    Done,
    /// Nothing was written: convert the result with `rpcmux_value::to_value` and write
    /// that with [`try_write_response`](crate::try_write_response).
    Fallback,
}

/// A `<methodResponse>` holding `result`, as [`try_write_response`] would write
/// `to_value(result)`: the same bytes, the same -32603 error (with `out` left as it was)
/// for a character XML 1.0 cannot carry. See [`Written::Fallback`].
///
/// [`try_write_response`]: crate::try_write_response
pub fn try_write_typed_response<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    result: &T,
) -> Result<Written, RpcError> {
    let start = out.len();
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<methodResponse><params><param>");
    let mut ser = Ser { out, bad: None };
    if result.serialize(&mut ser).is_err() {
        out.truncate(start);
        return Ok(Written::Fallback);
    }
    let bad = ser.bad;
    out.extend_from_slice(b"</param></params></methodResponse>\n");
    checked(out, start, bad).map(|()| Written::Done)
}

/// Left to the tree path (see the module's doc).
#[derive(Debug)]
struct Fallback;

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to the value path")
    }
}

impl std::error::Error for Fallback {}

impl ser::Error for Fallback {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Fallback
    }
}

/// Writes `<value>…</value>` items; `bad` keeps the first character XML cannot carry.
struct Ser<'a> {
    out: &'a mut Vec<u8>,
    bad: Option<char>,
}

type R = Result<(), Fallback>;

impl Ser<'_> {
    fn wrap(&mut self, inner: &[u8]) -> R {
        self.out.extend_from_slice(b"<value>");
        self.out.extend_from_slice(inner);
        self.out.extend_from_slice(b"</value>");
        Ok(())
    }

    fn int(&mut self, i: i64) -> R {
        self.out.extend_from_slice(b"<value>");
        write_int(self.out, i);
        self.out.extend_from_slice(b"</value>");
        Ok(())
    }

    fn string(&mut self, s: &str) -> R {
        self.out.extend_from_slice(b"<value><string>");
        let bad = escape_into(self.out, s);
        self.bad = self.bad.or(bad);
        self.out.extend_from_slice(b"</string></value>");
        Ok(())
    }

    /// `<value><struct><member><name>key</name>` of a one-member struct (an enum
    /// variant with content, as the tree writes it).
    fn open_variant(&mut self, variant: &str) {
        self.out.extend_from_slice(b"<value><struct>");
        self.member_name(variant);
    }

    fn close_variant(&mut self) {
        self.out.extend_from_slice(b"</member></struct></value>");
    }

    fn member_name(&mut self, name: &str) {
        self.out.extend_from_slice(b"<member><name>");
        let bad = escape_into(self.out, name);
        self.bad = self.bad.or(bad);
        self.out.extend_from_slice(b"</name>");
    }
}

/// `serialize_<int>` methods writing any int that fits `i64`, leaving the rest to the tree.
macro_rules! ints {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, v: $t) -> R {
            self.int(i64::try_from(v).map_err(|_| Fallback)?)
        }
    )*};
}

impl<'s, 'a> ser::Serializer for &'s mut Ser<'a> {
    type Ok = ();
    type Error = Fallback;
    type SerializeSeq = Items<'s, 'a>;
    type SerializeTuple = Items<'s, 'a>;
    type SerializeTupleStruct = Items<'s, 'a>;
    type SerializeTupleVariant = Items<'s, 'a>;
    type SerializeMap = Members<'s, 'a>;
    type SerializeStruct = Members<'s, 'a>;
    type SerializeStructVariant = Members<'s, 'a>;

    fn serialize_bool(self, v: bool) -> R {
        self.wrap(if v {
            b"<boolean>1</boolean>"
        } else {
            b"<boolean>0</boolean>"
        })
    }
    // Every int width: an `<int>`/`<i8>` when it fits 64 signed bits, else the tree's.
    ints!(
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128
    );
    fn serialize_f32(self, v: f32) -> R {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> R {
        self.out.extend_from_slice(b"<value><double>");
        write_double(self.out, v);
        self.out.extend_from_slice(b"</double></value>");
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> R {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.out.extend_from_slice(b"<value><base64>");
        write_base64(self.out, v);
        self.out.extend_from_slice(b"</base64></value>");
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.wrap(b"<nil/>")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.wrap(b"<nil/>")
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        self.wrap(b"<nil/>")
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R {
        self.open_variant(variant);
        v.serialize(&mut *self)?;
        self.close_variant();
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Items<'s, 'a>, Fallback> {
        self.out.extend_from_slice(b"<value><array><data>");
        Ok(Items {
            ser: self,
            variant: false,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Items<'s, 'a>, Fallback> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Items<'s, 'a>, Fallback> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Items<'s, 'a>, Fallback> {
        self.open_variant(variant);
        self.out.extend_from_slice(b"<value><array><data>");
        Ok(Items {
            ser: self,
            variant: true,
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Members<'s, 'a>, Fallback> {
        // Of unknown length (flatten): its keys may repeat, which the tree merges.
        len.ok_or(Fallback)?;
        self.out.extend_from_slice(b"<value><struct>");
        Ok(Members {
            ser: self,
            variant: false,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Members<'s, 'a>, Fallback> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Members<'s, 'a>, Fallback> {
        self.open_variant(variant);
        self.out.extend_from_slice(b"<value><struct>");
        Ok(Members {
            ser: self,
            variant: true,
        })
    }
}

/// An array being written; `variant`: inside a one-member struct to close too.
struct Items<'s, 'a> {
    ser: &'s mut Ser<'a>,
    variant: bool,
}

impl Items<'_, '_> {
    fn item<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        v.serialize(&mut *self.ser)
    }
    fn close(self) -> R {
        self.ser.out.extend_from_slice(b"</data></array></value>");
        if self.variant {
            self.ser.close_variant();
        }
        Ok(())
    }
}

/// serde's four sequence traits, each one `item` per element and `close` at the end.
macro_rules! items_impl {
    ($($tr:ident :: $method:ident),*) => {$(
        impl ser::$tr for Items<'_, '_> {
            type Ok = ();
            type Error = Fallback;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
                self.item(v)
            }
            fn end(self) -> R {
                self.close()
            }
        }
    )*};
}

items_impl!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A struct being written; `variant`: inside a one-member struct to close too.
struct Members<'s, 'a> {
    ser: &'s mut Ser<'a>,
    variant: bool,
}

impl Members<'_, '_> {
    fn member<T: Serialize + ?Sized>(&mut self, name: &str, v: &T) -> R {
        self.ser.member_name(name);
        v.serialize(&mut *self.ser)?;
        self.ser.out.extend_from_slice(b"</member>");
        Ok(())
    }
    fn close(self) -> R {
        self.ser.out.extend_from_slice(b"</struct></value>");
        if self.variant {
            self.ser.close_variant();
        }
        Ok(())
    }
}

impl ser::SerializeMap for Members<'_, '_> {
    type Ok = ();
    type Error = Fallback;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> R {
        k.serialize(KeyName(&mut *self.ser))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        v.serialize(&mut *self.ser)?;
        self.ser.out.extend_from_slice(b"</member>");
        Ok(())
    }
    fn end(self) -> R {
        self.close()
    }
}

/// A struct's fields, and a struct variant's, are members by name.
macro_rules! members_impl {
    ($($tr:ident),*) => {$(
        impl ser::$tr for Members<'_, '_> {
            type Ok = ();
            type Error = Fallback;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> R {
                self.member(k, v)
            }
            fn end(self) -> R {
                self.close()
            }
        }
    )*};
}

members_impl!(SerializeStruct, SerializeStructVariant);

/// Writes a map key that is a string as the member's name; any other key is left to the
/// tree path (which spells ints and bools as strings, and refuses the rest).
struct KeyName<'s, 'a>(&'s mut Ser<'a>);

/// `serde::ser::Impossible` for the key serializer's compound forms.
type NoCompound = ser::Impossible<(), Fallback>;

impl ser::Serializer for KeyName<'_, '_> {
    type Ok = ();
    type Error = Fallback;
    type SerializeSeq = NoCompound;
    type SerializeTuple = NoCompound;
    type SerializeTupleStruct = NoCompound;
    type SerializeTupleVariant = NoCompound;
    type SerializeMap = NoCompound;
    type SerializeStruct = NoCompound;
    type SerializeStructVariant = NoCompound;

    fn serialize_str(self, name: &str) -> R {
        self.0.member_name(name);
        Ok(())
    }
    fn serialize_bool(self, _: bool) -> R {
        Err(Fallback)
    }
    fn serialize_i8(self, _: i8) -> R {
        Err(Fallback)
    }
    fn serialize_i16(self, _: i16) -> R {
        Err(Fallback)
    }
    fn serialize_i32(self, _: i32) -> R {
        Err(Fallback)
    }
    fn serialize_i64(self, _: i64) -> R {
        Err(Fallback)
    }
    fn serialize_u8(self, _: u8) -> R {
        Err(Fallback)
    }
    fn serialize_u16(self, _: u16) -> R {
        Err(Fallback)
    }
    fn serialize_u32(self, _: u32) -> R {
        Err(Fallback)
    }
    fn serialize_u64(self, _: u64) -> R {
        Err(Fallback)
    }
    fn serialize_f32(self, _: f32) -> R {
        Err(Fallback)
    }
    fn serialize_f64(self, _: f64) -> R {
        Err(Fallback)
    }
    fn serialize_char(self, _: char) -> R {
        Err(Fallback)
    }
    fn serialize_bytes(self, _: &[u8]) -> R {
        Err(Fallback)
    }
    fn serialize_none(self) -> R {
        Err(Fallback)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> R {
        Err(Fallback)
    }
    fn serialize_unit(self) -> R {
        Err(Fallback)
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Err(Fallback)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
        Err(Fallback)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> R {
        Err(Fallback)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> R {
        Err(Fallback)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
    fn serialize_tuple(self, _: usize) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<NoCompound, Fallback> {
        Err(Fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::try_write_response;
    use rpcmux_value::to_value;
    use serde::Serialize;
    use std::collections::BTreeMap;

    /// The tree path's bytes (or error) for `v`.
    fn via_tree<T: Serialize>(v: &T) -> Result<Vec<u8>, RpcError> {
        let mut out = b"before".to_vec();
        try_write_response(&mut out, &to_value(v).expect("the tree path takes it"))?;
        Ok(out)
    }

    fn direct<T: Serialize>(v: &T) -> Result<Option<Vec<u8>>, RpcError> {
        let mut out = b"before".to_vec();
        match try_write_typed_response(&mut out, v) {
            Ok(Written::Done) => Ok(Some(out)),
            Ok(Written::Fallback) => {
                assert_eq!(out, b"before", "a fallback leaves the buffer as it was");
                Ok(None)
            }
            Err(e) => {
                assert_eq!(out, b"before", "a refusal leaves the buffer as it was");
                Err(e)
            }
        }
    }

    fn same<T: Serialize + std::fmt::Debug>(v: &T) {
        match direct(v) {
            Ok(Some(bytes)) => assert_eq!(
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(&via_tree(v).unwrap()),
                "{v:?}"
            ),
            Ok(None) => panic!("{v:?} fell back"),
            Err(e) => assert_eq!(Err(e), via_tree(v), "{v:?}"),
        }
    }

    struct Blob(Vec<u8>);

    impl Serialize for Blob {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }

    impl std::fmt::Debug for Blob {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Blob({:?})", self.0)
        }
    }

    /// Every shape a result takes, externally tagged (variants as one-member structs).
    #[derive(Debug, Serialize)]
    enum Node {
        Unit,
        Int(i64),
        Small(i8, u32),
        Num(f64),
        Text(String),
        Letter(char),
        Flag(bool),
        Maybe(Option<Box<Node>>),
        List(Vec<Node>),
        Obj(BTreeMap<String, Node>),
        Pair { a: Box<Node>, b: Option<u16> },
        Bytes(Blob),
        Plain(Plain),
    }

    /// The same shapes written bare.
    #[derive(Debug, Serialize)]
    #[serde(untagged)]
    enum Plain {
        Int(i64),
        Text(String),
        List(Vec<Node>),
        Obj(BTreeMap<String, Node>),
        Nothing(()),
    }

    fn text(rng: &mut fastrand::Rng) -> String {
        // Markup, CR, non-ASCII, and now and then a character XML cannot carry.
        const PIECES: &[&str] = &[
            "a", "<", ">", "&", "\r", "\n", "é", "😀", " ", "]]>", "\u{1}", "\u{fffe}",
        ];
        let n = rng.usize(0..6);
        (0..n)
            .map(|_| {
                let p = PIECES[rng.usize(..PIECES.len())];
                if p.starts_with('\u{1}') || p.starts_with('\u{fffe}') {
                    if rng.u8(..20) == 0 {
                        p
                    } else {
                        "x"
                    }
                } else {
                    p
                }
            })
            .collect()
    }

    fn node(rng: &mut fastrand::Rng, depth: u32) -> Node {
        let pick = if depth == 0 {
            rng.u8(..8)
        } else {
            rng.u8(..13)
        };
        match pick {
            0 => Node::Unit,
            1 => Node::Int(match rng.u8(..3) {
                0 => rng.i64(-5..5),
                1 => rng.i64(..),
                _ => i64::from(i32::MAX) + rng.i64(-2..2),
            }),
            2 => Node::Small(rng.i8(..), rng.u32(..)),
            3 => Node::Num(match rng.u8(..5) {
                0 => f64::NAN,
                1 => f64::NEG_INFINITY,
                2 => -0.0,
                _ => f64::from_bits(rng.u64(..)),
            }),
            4 => Node::Text(text(rng)),
            5 => Node::Letter(rng.char(..)),
            6 => Node::Flag(rng.bool()),
            7 => Node::Bytes(Blob((0..rng.usize(..8)).map(|_| rng.u8(..)).collect())),
            8 => Node::Maybe(rng.bool().then(|| Box::new(node(rng, depth - 1)))),
            9 => Node::List((0..rng.usize(..4)).map(|_| node(rng, depth - 1)).collect()),
            10 => Node::Obj(
                (0..rng.usize(..4))
                    .map(|_| (text(rng), node(rng, depth - 1)))
                    .collect(),
            ),
            11 => Node::Pair {
                a: Box::new(node(rng, depth - 1)),
                b: rng.bool().then(|| rng.u16(..)),
            },
            _ => Node::Plain(match rng.u8(..5) {
                0 => Plain::Int(rng.i64(..)),
                1 => Plain::Text(text(rng)),
                2 => Plain::List((0..rng.usize(..3)).map(|_| node(rng, depth - 1)).collect()),
                3 => Plain::Obj(
                    (0..rng.usize(..3))
                        .map(|_| (text(rng), node(rng, depth - 1)))
                        .collect(),
                ),
                _ => Plain::Nothing(()),
            }),
        }
    }

    #[test]
    fn writes_what_the_tree_path_writes_for_random_results() {
        let mut rng = fastrand::Rng::with_seed(13);
        for _ in 0..3000 {
            let n = node(&mut rng, 4);
            same(&n);
            if let Node::Plain(p) = &n {
                same(p);
            }
        }
    }

    #[test]
    fn forms_with_rules_of_their_own_are_left_to_the_tree_path() {
        #[derive(Serialize)]
        struct Inner {
            x: u8,
        }
        #[derive(Serialize)]
        struct Flat {
            a: u8,
            #[serde(flatten)]
            inner: Inner,
        }
        let int_keys: BTreeMap<i32, u8> = [(1, 2)].into();
        assert_eq!(direct(&u64::MAX), Ok(None));
        assert_eq!(direct(&(i64::MAX as u64 + 1)), Ok(None));
        assert_eq!(direct(&i128::MIN), Ok(None));
        assert_eq!(direct(&int_keys), Ok(None));
        assert_eq!(
            direct(&Flat {
                a: 1,
                inner: Inner { x: 2 }
            }),
            Ok(None)
        );
        // A u64 and an i128 that fit are written here, as the tree writes them.
        same(&(i64::MAX as u64));
        same(&(-5i128));
    }
}
