//! The typed parameter shapes `msgpack_typed_oracle` reads with rpcmux's typed reader
//! and with rmp-serde: ints of every width, floats, strings, bytes, chars, options,
//! nested structs, every kind of enum variant, sequences and maps. `Arbitrary`, so the
//! writer half can make them from fuzzer bytes too.
use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Ints {
    pub a: u8,
    pub b: u16,
    pub c: u32,
    pub d: u64,
    pub e: i8,
    pub f: i16,
    pub g: i32,
    pub h: i64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Floats {
    pub x: f32,
    pub y: f64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Texts {
    pub s: String,
    #[serde(with = "serde_bytes")]
    pub b: Vec<u8>,
    pub c: char,
    pub flag: bool,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Options {
    pub a: Option<i32>,
    pub b: Option<String>,
    pub c: Option<bool>,
    pub d: Option<Ints>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Arbitrary)]
pub enum Shape {
    Dot,
    Circle(f64),
    Rect { w: u32, h: u32 },
    Pair(i8, i8),
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Nested {
    pub name: String,
    pub shapes: Vec<Shape>,
    pub inner: Option<Texts>,
    pub table: BTreeMap<String, Vec<u16>>,
    pub pair: (i64, Shape),
    pub unit: (),
}

/// The shapes, chosen by an input's first byte.
pub const SHAPES: u8 = 7;
