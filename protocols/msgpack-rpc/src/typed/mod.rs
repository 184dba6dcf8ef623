//! serde for msgpack: a Rust type read straight from the wire bytes and written straight
//! into the output, with no [`Value`](rpcmux_value::Value) tree between (typed verbs).
//!
//! ```
//! use rpcmux_msgpack_rpc::typed;
//! let mut out = bytes::BytesMut::new();
//! typed::write(&mut out, &("a", 1u8, Some(2.5))).unwrap();
//! assert_eq!(out[..4], [0x93, 0xa1, b'a', 0x01]);
//! let back: (String, u8, Option<f64>) = typed::from_slice(&out).unwrap();
//! assert_eq!(back, ("a".into(), 1, Some(2.5)));
//! ```

mod de;
mod error;
mod ser;

pub use de::Deserializer;
pub use error::Error;
pub use ser::{write, Compound, Serializer};

/// Read a `T` from `buf`, which must hold exactly one msgpack item.
pub fn from_slice<'de, T: serde::Deserialize<'de>>(buf: &'de [u8]) -> Result<T, Error> {
    let mut de = Deserializer::new(buf);
    let v = T::deserialize(&mut de)?;
    match buf.len() - de.position() {
        0 => Ok(v),
        n => Err(Error::new(format!("{n} byte(s) after the msgpack value"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_value, write_value};
    use bytes::BytesMut;
    use rpcmux_value::{vstruct, Value};
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Shape {
        Dot,
        Circle(f64),
        Rect { w: u32, h: u32 },
        Pair(i8, i8),
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Everything {
        name: String,
        big: u64,
        small: i64,
        ratio: f64,
        maybe: Option<i32>,
        none: Option<i32>,
        tags: Vec<String>,
        #[serde(with = "bytes_as_bin")]
        blob: Vec<u8>,
        shapes: Vec<Shape>,
        nested: BTreeMap<String, Vec<u16>>,
        unit: (),
        flag: bool,
    }

    mod bytes_as_bin {
        pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(b)
        }
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
            struct V;
            impl serde::de::Visitor<'_> for V {
                type Value = Vec<u8>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                    Ok(v.to_vec())
                }
            }
            d.deserialize_bytes(V)
        }
    }

    fn everything() -> Everything {
        Everything {
            name: "Grüße, 世界".into(),
            big: u64::MAX,
            small: i64::MIN,
            ratio: 0.1 + 0.2,
            maybe: Some(-33),
            none: None,
            tags: vec!["a".into(), "x".repeat(40)],
            blob: vec![0, 255, 7],
            shapes: vec![
                Shape::Dot,
                Shape::Circle(1.5),
                Shape::Rect { w: 3, h: 4 },
                Shape::Pair(-1, 1),
            ],
            nested: [("k".to_string(), vec![1, 300, 65535])].into(),
            unit: (),
            flag: true,
        }
    }

    fn enc<T: Serialize>(v: &T) -> BytesMut {
        let mut out = BytesMut::new();
        write(&mut out, v).unwrap();
        out
    }

    #[test]
    fn every_kind_of_type_round_trips_exactly() {
        let v = everything();
        let wire = enc(&v);
        assert_eq!(from_slice::<Everything>(&wire).unwrap(), v);
    }

    #[test]
    fn writes_what_the_value_path_writes_for_the_same_data() {
        // u64::MAX has no Value int: compare a struct the model holds exactly.
        #[derive(Serialize)]
        struct S<'a> {
            s: &'a str,
            i: i64,
            f: f32,
            arr: Vec<i64>,
            none: Option<u8>,
        }
        let typed = enc(&S {
            s: "hi",
            i: -200,
            f: 0.5,
            arr: (0..20).collect(),
            none: None,
        });
        let tree = vstruct! {
            "s" => "hi", "i" => -200, "f" => 0.5,
            "arr" => Value::Array((0..20).map(Value::Int).collect()), "none" => Value::Nil,
        };
        let mut via_tree = BytesMut::new();
        write_value(&mut via_tree, &tree).unwrap();
        assert_eq!(typed, via_tree);
        assert_eq!(read_value(&typed, 8).unwrap().0, tree);
    }

    #[test]
    fn unknown_lengths_get_their_smallest_header() {
        struct Filtered(usize);
        impl Serialize for Filtered {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq((0..self.0).filter(|_| true))
            }
        }
        #[derive(Serialize)]
        struct Flat {
            a: u8,
            #[serde(flatten)]
            rest: BTreeMap<String, u8>,
        }
        for n in [0, 3, 15, 16, 70_000] {
            let wire = enc(&Filtered(n));
            let mut want = BytesMut::new();
            let items: Vec<Value> = (0..n as i64).map(Value::Int).collect();
            write_value(&mut want, &Value::Array(items)).unwrap();
            assert_eq!(wire, want, "{n} items");
        }
        let flat = enc(&Flat {
            a: 1,
            rest: [("b".to_string(), 2)].into(),
        });
        assert_eq!(flat[..], [0x82, 0xa1, b'a', 1, 0xa1, b'b', 2]);
    }

    #[test]
    fn reads_every_int_width_and_non_utf8_str_as_bytes() {
        let widths: &[(&[u8], i64)] = &[
            (&[0x05], 5),
            (&[0xcc, 0xff], 255),
            (&[0xcd, 1, 0], 256),
            (&[0xce, 0, 1, 0, 0], 65536),
            (&[0xcf, 0, 0, 0, 1, 0, 0, 0, 0], 1 << 32),
            (&[0xff], -1),
            (&[0xd0, 0x80], -128),
            (&[0xd1, 0x80, 0], -32768),
            (&[0xd2, 0x80, 0, 0, 0], i64::from(i32::MIN)),
            (&[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0], i64::MIN),
        ];
        for (wire, want) in widths {
            assert_eq!(from_slice::<i64>(wire).unwrap(), *want, "{wire:02x?}");
        }
        assert_eq!(from_slice::<f64>(&[0xca, 0x3f, 0xc0, 0, 0]).unwrap(), 1.5);
        assert!(from_slice::<u8>(&[0xcd, 1, 0]).is_err(), "256 is no u8");
        // A non-UTF-8 str reaches a visitor as bytes: a String refuses it, a Value keeps it.
        let raw = [0xa2, 0xff, 0xfe];
        assert!(from_slice::<String>(&raw).is_err());
        assert_eq!(
            from_slice::<Value>(&raw).unwrap(),
            Value::Bytes(vec![0xff, 0xfe])
        );
    }

    #[test]
    fn owned_strings_of_every_length_read_whole() {
        let text: String = ('a'..='z').chain('A'..='Z').collect();
        for n in 0..=40 {
            let s = &text[..n];
            let wire = enc(&s);
            assert_eq!(from_slice::<String>(&wire).unwrap(), s, "{} bytes", s.len());
            // Borrowed and owned reads agree, in a struct as on their own.
            assert_eq!(
                from_slice::<(String, Box<str>)>(&enc(&(s, s)))
                    .unwrap()
                    .1
                    .as_ref(),
                s
            );
        }
        // Multi-byte UTF-8 read from a fixstr (the inline copy), and a truncated one.
        assert_eq!(from_slice::<String>(&enc(&"é€😀")).unwrap(), "é€😀");
        assert!(from_slice::<String>(&[0xa5, b'a', b'b']).is_err());
    }

    #[test]
    fn hostile_input_is_an_error_not_a_panic() {
        let deep = [vec![0x91; 100], vec![0xc0]].concat();
        assert!(from_slice::<Value>(&deep).unwrap_err().0.contains("nested"));
        // Declared lengths past the bytes present, and every truncation of a valid value.
        for wire in [
            &[0xdd, 0xff, 0xff, 0xff, 0xff][..],
            &[0xdb, 0, 0, 1, 0, b'a'],
        ] {
            assert!(from_slice::<Value>(wire).is_err());
            assert!(from_slice::<serde::de::IgnoredAny>(wire).is_err());
        }
        let full = enc(&everything());
        for cut in 0..full.len() {
            assert!(
                from_slice::<Everything>(&full[..cut]).is_err(),
                "cut at {cut}"
            );
            assert!(from_slice::<serde::de::IgnoredAny>(&full[..cut]).is_err());
        }
        assert!(from_slice::<Value>(&[0xc1]).is_err(), "reserved byte");
        assert!(
            from_slice::<Value>(&[0xd6, 0xff, 0, 0, 0, 1]).is_err(),
            "extension"
        );
        assert!(from_slice::<u8>(&[0x01, 0x02])
            .unwrap_err()
            .0
            .contains("after"));
        assert!(from_slice::<(u8,)>(&[0x92, 1, 2])
            .unwrap_err()
            .0
            .contains("unread"));
    }

    #[test]
    fn unknown_fields_are_skipped_whatever_they_hold() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Small {
            b: u8,
        }
        let mut wire = BytesMut::new();
        let tree = vstruct! {
            "a" => Value::Array(vec![vstruct!{"x" => Value::Bytes(vec![1; 300])}, Value::Double(1.0)]),
            "t" => Value::DateTime(rpcmux_value::DateTime::from_unix(1, 5).unwrap()),
            "b" => 7,
        };
        write_value(&mut wire, &tree).unwrap();
        assert_eq!(from_slice::<Small>(&wire).unwrap(), Small { b: 7 });
    }
}
