//! Reading a typed verb's parameters from any serde format, by position or by name.
//!
//! A parameter struct's fields are its parameters, in order. Protocols that send
//! parameters by position (XML-RPC, msgpack-rpc, JSON arrays) have each position read
//! as the field of that index: the array is shown to the struct as a map keyed by field
//! names, so serde's own rules apply either way (an `Option` or `#[serde(default)]` field
//! left out is `None` or its default; a required one left out is "missing"). Named
//! parameters (JSON objects, STOMP, `k=v` on the CLI) must name fields that exist. Every
//! error inside a parameter is prefixed with its name. No intermediate tree: the wrapped
//! deserializer (rpcmux-msgpack-rpc's over the wire bytes, serde_json's, or a `Value`'s) feeds the struct.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use std::fmt;

/// How the parameters arrived, and how many there are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    Positional(usize),
    Named(usize),
    /// By position, how many not known before they are read (XML-RPC's `<param>`s):
    /// read as the type's sequence of fields; a count other than the type's fails
    /// (the caller then reads the call as values, where every count is answered).
    Sequence,
    /// As [`Shape::Sequence`], for a type that takes a fixed number of parameters only
    /// (a struct's fields, a tuple's items, none): any other type fails at once, so the
    /// caller counts the items first and applies its bound on their number (a JSON
    /// array, read in one pass when it holds the type's fields).
    Fields,
}

/// A deserializer for a parameter list, wrapping the format's own.
pub(crate) struct ParamsDe<D> {
    pub inner: D,
    pub shape: Shape,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ParamsDe<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        if let Shape::Fields = self.shape {
            return Err(de::Error::custom("not a fixed number of parameters"));
        }
        self.inner.deserialize_any(v)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        match self.shape {
            Shape::Positional(n) if n > fields.len() => Err(de::Error::custom(format_args!(
                "takes at most {} parameter(s), got {n}",
                fields.len()
            ))),
            // Every parameter sent: the struct reads them in order, as the sequence they
            // are (serde's `visit_seq`). No field names to match, and no per-field
            // `Option` slot to fill and then unwrap: a big parameter was copied once per
            // such step. (A hand-written `Deserialize` must take a sequence too, as
            // derived ones and formats like bincode have it.)
            Shape::Positional(n) if n == fields.len() => {
                self.inner.deserialize_seq(SeqNamed { visitor, fields })
            }
            Shape::Positional(n) => self.inner.deserialize_seq(SeqAsMap { visitor, fields, n }),
            Shape::Sequence | Shape::Fields => {
                self.inner.deserialize_seq(SeqNamed { visitor, fields })
            }
            Shape::Named(_) => self.inner.deserialize_map(KnownNames { visitor, fields }),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        match self.shape {
            // The empty list is read all the same, so a reader that tells where the
            // parameters end (msgpack's, reading an unframed call) has passed them.
            Shape::Positional(0) | Shape::Named(0) | Shape::Sequence | Shape::Fields => {
                self.inner.deserialize_any(Nothing(v))
            }
            Shape::Positional(n) | Shape::Named(n) => Err(de::Error::custom(format_args!(
                "takes no parameters, got {n}"
            ))),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.deserialize_unit(v)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, D::Error> {
        match self.shape {
            Shape::Positional(n) if n != len => Err(de::Error::custom(format_args!(
                "takes {len} parameter(s), got {n}"
            ))),
            Shape::Positional(_) | Shape::Sequence | Shape::Fields => {
                self.inner.deserialize_tuple(len, v)
            }
            Shape::Named(_) => Err(de::Error::custom("takes its parameters by position only")),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option newtype_struct seq tuple_struct map enum identifier
        ignored_any
    }
}

/// An empty parameter list (array, map or nil), visited as unit.
struct Nothing<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Nothing<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("no parameters")
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<V::Value, A::Error> {
        match seq.next_element::<de::IgnoredAny>()? {
            None => self.0.visit_unit(),
            Some(_) => Err(de::Error::custom("takes no parameters")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V::Value, A::Error> {
        match map.next_key::<de::IgnoredAny>()? {
            None => self.0.visit_unit(),
            Some(_) => Err(de::Error::custom("takes no parameters")),
        }
    }
}

/// A struct visitor fed a whole parameter array as its sequence of fields.
struct SeqNamed<V> {
    visitor: V,
    fields: &'static [&'static str],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SeqNamed<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of parameters")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(NamedItems {
            seq,
            fields: self.fields,
            i: 0,
        })
    }
}

/// The items of a parameter array, each one's errors naming its parameter.
struct NamedItems<A> {
    seq: A,
    fields: &'static [&'static str],
    i: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for NamedItems<A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        let field = self.fields.get(self.i).copied().unwrap_or("?");
        self.i += 1;
        self.seq.next_element_seed(Named { seed, field })
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// A struct visitor fed an array as a map from field names.
struct SeqAsMap<V> {
    visitor: V,
    fields: &'static [&'static str],
    n: usize,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SeqAsMap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of parameters")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(SeqMap {
            seq,
            fields: self.fields,
            n: self.n,
            i: 0,
        })
    }
}

struct SeqMap<A> {
    seq: A,
    fields: &'static [&'static str],
    n: usize,
    i: usize,
}

impl<'de, A: SeqAccess<'de>> MapAccess<'de> for SeqMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        k: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if self.i >= self.n {
            return Ok(None);
        }
        k.deserialize(BorrowedStrDeserializer::new(self.fields[self.i]))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let field = self.fields[self.i];
        self.i += 1;
        self.seq
            .next_element_seed(Named { seed, field })?
            .ok_or_else(|| de::Error::custom(format_args!("missing parameter `{field}`")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.n - self.i)
    }
}

/// A struct visitor fed a map whose keys must be its field names.
struct KnownNames<V> {
    visitor: V,
    fields: &'static [&'static str],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KnownNames<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("parameters by name")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(NameMap {
            map,
            fields: self.fields,
            field: "",
        })
    }
}

struct NameMap<A> {
    map: A,
    fields: &'static [&'static str],
    field: &'static str,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for NameMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        k: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(name) = self.map.next_key::<std::borrow::Cow<'de, str>>()? else {
            return Ok(None);
        };
        let Some(field) = self.fields.iter().find(|f| **f == name) else {
            return Err(de::Error::custom(format_args!("no parameter `{name}`")));
        };
        self.field = field;
        k.deserialize(BorrowedStrDeserializer::new(field)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(Named {
            seed,
            field: self.field,
        })
    }
}

/// One parameter's value: its errors name it.
struct Named<S> {
    seed: S,
    field: &'static str,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Named<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        let field = self.field;
        self.seed
            .deserialize(d)
            .map_err(|e| de::Error::custom(format_args!("parameter `{field}`: {e}")))
    }
}

/// serde's words, in a parameter list's terms; serde_json's positions dropped (they
/// point into the request, which the caller did not write by hand).
pub(crate) fn explain(e: impl fmt::Display) -> String {
    let mut s = e.to_string();
    // Only a missing parameter itself: a field missing inside one ("parameter `vm`:
    // missing field `id`") is a field of that parameter's value.
    if let Some(rest) = s.strip_prefix("missing field `") {
        s = format!("missing parameter `{rest}");
    }
    while let Some(at) = s.find(" at line ") {
        let rest = &s[at + 9..];
        let end = rest
            .find(" column ")
            .map(|c| {
                let digits = rest[c + 8..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .count();
                c + 8 + digits
            })
            .unwrap_or(rest.len());
        s.replace_range(at..at + 9 + end, "");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::{vstruct, Value};
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[allow(non_snake_case)]
    struct Create {
        vmID: String,
        mem: Option<i64>,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn positional(v: Vec<Value>) -> Result<Create, String> {
        let n = v.len();
        let de = ParamsDe {
            inner: Value::Array(v),
            shape: Shape::Positional(n),
        };
        Create::deserialize(de).map_err(explain)
    }

    #[test]
    fn by_position_optional_and_default_fields_may_be_left_out() {
        let want = Create {
            vmID: "a".into(),
            mem: None,
            tags: vec![],
        };
        assert_eq!(positional(vec!["a".into()]), Ok(want));
        let e = positional(vec![]).unwrap_err();
        assert_eq!(e, "missing parameter `vmID`");
        let e = positional(vec!["a".into(), "x".into()]).unwrap_err();
        assert!(
            e.starts_with("parameter `mem`: invalid type: string \"x\""),
            "{e}"
        );
        // Every parameter sent (read as the struct's sequence): errors still name theirs.
        let all = positional(vec!["a".into(), 5.into(), Value::Array(vec!["t".into()])]);
        let want = Create {
            vmID: "a".into(),
            mem: Some(5),
            tags: vec!["t".into()],
        };
        assert_eq!(all, Ok(want));
        let e = positional(vec!["a".into(), 5.into(), "t".into()]).unwrap_err();
        assert!(
            e.starts_with("parameter `tags`: invalid type: string \"t\""),
            "{e}"
        );
        let e = positional(vec![7.into(), 5.into(), Value::Array(vec![])]).unwrap_err();
        assert!(e.starts_with("parameter `vmID`: invalid type"), "{e}");
        // A field missing inside a parameter's value is that value's field.
        #[derive(Debug, Deserialize)]
        struct Outer {
            #[allow(dead_code)]
            inner: Create,
        }
        let e = Outer::deserialize(ParamsDe {
            inner: Value::Array(vec![vstruct! { "mem" => 1 }]),
            shape: Shape::Positional(1),
        })
        .map_err(explain)
        .unwrap_err();
        assert_eq!(e, "parameter `inner`: missing field `vmID`");
        let e = positional(vec!["a".into(), 1.into(), Value::Array(vec![]), 4.into()]);
        assert_eq!(e.unwrap_err(), "takes at most 3 parameter(s), got 4");
    }

    #[test]
    fn by_name_unknown_names_are_refused_and_json_positions_dropped() {
        let named = |v: Value| {
            let n = v.as_struct().map_or(0, |m| m.len());
            Create::deserialize(ParamsDe {
                inner: v,
                shape: Shape::Named(n),
            })
            .map_err(explain)
        };
        let got = named(vstruct! { "mem" => 5, "vmID" => "a" }).unwrap();
        assert_eq!((got.vmID.as_str(), got.mem), ("a", Some(5)));
        assert_eq!(
            named(vstruct! { "vmId" => "a" }).unwrap_err(),
            "no parameter `vmId`"
        );
        let mut json = serde_json::Deserializer::from_str(r#"{"vmID": 7}"#);
        let e = Create::deserialize(ParamsDe {
            inner: &mut json,
            shape: Shape::Named(1),
        })
        .map_err(explain)
        .unwrap_err();
        assert_eq!(
            e,
            "parameter `vmID`: invalid type: integer `7`, expected a string"
        );
    }
}
