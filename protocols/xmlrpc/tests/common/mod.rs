//! Payloads shared by the integration tests and mirrored in the Python-made fixtures.
#![allow(dead_code)]

use rpcmux_value::{vstruct, DateTime, Value};

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `MUSIC_ENTRY` from shared/reference/payload.py, member order kept.
pub fn music_entry() -> Value {
    let strs = |v: &[&str]| Value::Array(v.iter().map(|s| Value::from(*s)).collect());
    Value::Array(vec![
        "MusicEntry".into(),
        vstruct! {
            "email" => "lalcorn@ultranet", "time" => "7:30pm", "tickets" => "", "program" => "",
            "state" => "MA", "start" => "2002-01-26", "venueurl" => "", "country" => "",
            "performers" => strs(&["An Evening with Karen Savoca"]), "addressid" => 7283,
            "name" => "", "zip" => "", "city" => "Sudbury",
            "info" => "Reservations required. Please call (978)443-3253 or e-mail Laurie at lal...@ultranet.com.",
            "merchandise" => strs(&[]), "event" => "", "keywords" => strs(&[".zyx.41"]),
            "submit_time" => "2001-08-28", "key" => 325629, "active" => 1, "end" => "2002-01-26",
            "price" => "$17", "address3" => "", "address1" => "",
            "venue" => "Fox Run House Concerts", "address2" => "",
            "update_time" => "2001-09-22:19:28:44",
        },
    ])
}

/// What Python's `loads` gives for fixtures/every_type_response.xml.
pub fn every_type() -> Value {
    let blob: Vec<u8> = (0..=255u8).chain(0..=255u8).collect();
    vstruct! {
        "int" => 42, "neg" => -7, "i8" => 1_099_511_627_776i64, "bool_t" => true,
        "bool_f" => false, "double" => std::f64::consts::PI, "small" => 1e-300,
        // The fixture holds a literal CR LF; XML reads it as LF, as Python does.
        "string" => "héllo <&> \"quoted\" 'apos'\n\ttab ☃ 𝄞",
        "empty" => "", "nil" => (),
        "when" => DateTime::from_ymd_hms(2002, 1, 26, 7, 30, 0).unwrap(),
        "blob" => blob,
        "array" => Value::Array(vec![
            1.into(), "two".into(), 3.0.into(), Value::Array(vec![Value::Nil]), vstruct! {},
        ]),
        "nested" => vstruct! {"a" => vstruct! {"b" => vstruct! {"c" => Value::Array(vec![])}}},
    }
}

/// The params of fixtures/every_type_call.xml.
pub fn every_type_params() -> Vec<Value> {
    vec![
        7.into(),
        (-2147483648i64).into(),
        true.into(),
        2.5.into(),
        "a <b> & c".into(),
        "".into(),
        Value::Nil,
        DateTime::from_ymd_hms(1999, 12, 31, 23, 59, 58)
            .unwrap()
            .into(),
        Value::Bytes(b"\x00\xffhello".to_vec()),
        Value::Array(vec![1.into(), Value::Array(vec![2.into(), vstruct! {}])]),
        vstruct! {"k" => "v", "z" => ()},
    ]
}
