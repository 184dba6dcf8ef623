//! A request object read in one pass, its `params` either built into a
//! [`Value`](rpcmux_value::Value) tree or kept as text for a method whose server reads
//! them into its own type (a typed verb deserializes straight from the JSON, with no
//! tree). Which one depends on the
//! method, so members are read in the order they come: `params` after `method` (the
//! usual order) is read the right way at once; before it, it is kept as text and built
//! only if the method turns out to want a tree.

use crate::exact::Checked;
use rpcmux_value::Str;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// `params` as read.
pub(crate) enum ParamsIn<'a> {
    Tree(Checked),
    Raw(&'a RawValue),
}

/// The members of a request object, as the derived reader would give them.
pub(crate) struct Wire<'a> {
    pub jsonrpc: Option<Text<'a>>,
    pub method: Option<Str>,
    pub params: Option<ParamsIn<'a>>,
    pub id: Option<&'a RawValue>,
}

/// Reads a [`Wire`], keeping `params` as text for methods `raw_for` names.
pub(crate) struct WireSeed<'f> {
    pub raw_for: &'f dyn Fn(&str) -> bool,
}

impl<'de> DeserializeSeed<'de> for WireSeed<'_> {
    type Value = Wire<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Wire<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for WireSeed<'_> {
    type Value = Wire<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Wire<'de>, A::Error> {
        let mut w = Wire {
            jsonrpc: None,
            method: None,
            params: None,
            id: None,
        };
        // A `params` member came (a `null` one sets no params, but is a member: a
        // second `params` after it, or before it, is a repeat all the same).
        let mut params_seen = false;
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Jsonrpc => set(&mut w.jsonrpc, "jsonrpc", map.next_value()?)?,
                Field::Method => set(&mut w.method, "method", map.next_value()?)?,
                Field::Id => set(&mut w.id, "id", map.next_value()?)?,
                Field::Params => {
                    if std::mem::replace(&mut params_seen, true) {
                        return Err(de::Error::duplicate_field("params"));
                    }
                    // `"params": null` is no params, as an absent member is.
                    let p = match &w.method {
                        Some(m) if !(self.raw_for)(m) => {
                            map.next_value::<Option<Checked>>()?.map(ParamsIn::Tree)
                        }
                        _ => Some(map.next_value::<&RawValue>()?)
                            .filter(|raw| raw.get() != "null")
                            .map(ParamsIn::Raw),
                    };
                    if let Some(p) = p {
                        set(&mut w.params, "params", p)?;
                    }
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(w)
    }
}

/// A member given twice makes the request malformed, as with serde's derive.
fn set<T, E: de::Error>(slot: &mut Option<T>, name: &'static str, v: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(v);
    Ok(())
}

/// A member name, matched without allocating (as serde's derive does).
enum Field {
    Jsonrpc,
    Method,
    Params,
    Id,
    Other,
}

impl<'de> de::Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        d.deserialize_identifier(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
        Ok(match v {
            "jsonrpc" => Field::Jsonrpc,
            "method" => Field::Method,
            "params" => Field::Params,
            "id" => Field::Id,
            _ => Field::Other,
        })
    }
}

/// A string borrowed from the request when it has no escapes, owned when it has.
pub(crate) struct Text<'a>(pub std::borrow::Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(v.to_owned().into()))
            }
        }
        d.deserialize_str(V)
    }
}
