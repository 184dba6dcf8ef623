//! [`Value`] → XML-RPC text, appended to one caller-owned buffer.
//!
//! Output is compact (no indentation): every XML-RPC reader accepts it and it is the
//! fewest bytes. Numbers are formatted with itoa/ryu and base64 is encoded in place,
//! so writing allocates nothing beyond the buffer's own growth.
//!
//! Type choices: an int that fits 32 bits is `<int>`, a larger one `<i8>` (Python,
//! Apache and most readers take it; nothing else can carry it). Strings are always
//! typed `<string>`. Doubles use the shortest text that reads back to the same bits
//! (ryu), which Python's `float()` parses exactly; NaN and infinities are written as
//! Python writes them, `nan`, `inf`, `-inf` (XML-RPC has no spelling for them; Python
//! and rpcmux read these back, strict Java readers may not). A dateTime is
//! `YYYYMMDDTHH:MM:SS`, the only form Python's client parses, with fractional seconds
//! (`.123`, `.123456`, `.123456789`) only when it has them: kept rather than dropped
//! (Python's `use_builtin_types` reader refuses a fraction; its default `DateTime` keeps
//! the text). A year outside 0..=9999 is written `+10000-01-01T00:00:00` (see
//! [`DateTime::to_xmlrpc`]), which rpcmux reads back.
//!
//! Characters XML 1.0 cannot carry (C0 controls but TAB/LF/CR, U+FFFE, U+FFFF; see
//! [`check_xml_chars`](crate::check_xml_chars)) have no XML-RPC spelling at all. They are
//! never silently dropped or replaced: [`try_write_response`] and [`try_write_call`]
//! refuse the value (and leave `out` as it was); [`write_response`] answers with a fault
//! instead; [`write_fault`] spells them out visibly in its message (`\u{1}`). Only
//! [`write_call`] and [`write_value`], which cannot fail, write them as character
//! references, which every XML 1.0 reader (rpcmux's included) refuses loudly.

use crate::escape::{escape_into, visible};
use crate::xmlchar::unencodable;
use base64::Engine as _;
use chrono::{Datelike, Timelike};
use rpcmux_value::{DateTime, RpcError, Value};

pub(crate) const XML_DECL: &[u8] = b"<?xml version=\"1.0\"?>\n";

/// `<value>…</value>` for one value, recursively. A string holding a character XML 1.0
/// cannot carry is written with character references no reader accepts; use
/// [`try_write_value`] to be told instead.
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
    let _ = value(out, v);
}

/// [`write_value`], refusing a value that holds a character XML 1.0 cannot carry
/// (-32603, "string contains a character XML 1.0 cannot carry (U+0001)"); `out` is then
/// left as it was.
pub fn try_write_value(out: &mut Vec<u8>, v: &Value) -> Result<(), RpcError> {
    let start = out.len();
    let bad = value(out, v);
    checked(out, start, bad)
}

/// Keep what was written, or undo it and name the character that cannot be carried.
pub(crate) fn checked(out: &mut Vec<u8>, start: usize, bad: Option<char>) -> Result<(), RpcError> {
    match bad {
        None => Ok(()),
        Some(c) => {
            out.truncate(start);
            Err(unencodable(c))
        }
    }
}

/// Write one value; returns the first character XML 1.0 cannot carry, if any.
fn value(out: &mut Vec<u8>, v: &Value) -> Option<char> {
    let mut bad = None;
    out.extend_from_slice(b"<value>");
    match v {
        Value::Nil => out.extend_from_slice(b"<nil/>"),
        Value::Bool(b) => out.extend_from_slice(if *b {
            b"<boolean>1</boolean>"
        } else {
            b"<boolean>0</boolean>"
        }),
        Value::Int(i) => write_int(out, *i),
        Value::Double(d) => {
            out.extend_from_slice(b"<double>");
            write_double(out, *d);
            out.extend_from_slice(b"</double>");
        }
        Value::String(s) => {
            out.extend_from_slice(b"<string>");
            bad = escape_into(out, s);
            out.extend_from_slice(b"</string>");
        }
        Value::Bytes(b) => {
            out.extend_from_slice(b"<base64>");
            write_base64(out, b);
            out.extend_from_slice(b"</base64>");
        }
        Value::DateTime(d) => {
            out.extend_from_slice(b"<dateTime.iso8601>");
            write_datetime(out, d);
            out.extend_from_slice(b"</dateTime.iso8601>");
        }
        Value::Array(items) => {
            out.extend_from_slice(b"<array><data>");
            for item in items {
                bad = bad.or(value(out, item));
            }
            out.extend_from_slice(b"</data></array>");
        }
        Value::Struct(map) => {
            out.extend_from_slice(b"<struct>");
            for (name, item) in map.iter() {
                out.extend_from_slice(b"<member><name>");
                bad = bad.or(escape_into(out, name));
                out.extend_from_slice(b"</name>");
                bad = bad.or(value(out, item));
                out.extend_from_slice(b"</member>");
            }
            out.extend_from_slice(b"</struct>");
        }
    }
    out.extend_from_slice(b"</value>");
    bad
}

/// A successful `<methodResponse>` holding `result`; or, when `result` holds a
/// character XML 1.0 cannot carry, a `<fault>` saying so (-32603, "string contains a
/// character XML 1.0 cannot carry (U+0001)") instead: never a document no client can
/// read, never altered data. See [`try_write_response`] to handle that case yourself.
pub fn write_response(out: &mut Vec<u8>, result: &Value) {
    if let Err(e) = try_write_response(out, result) {
        write_fault(out, &e);
    }
}

/// A successful `<methodResponse>` holding `result`, or the error (-32603) if `result`
/// holds a character XML 1.0 cannot carry, with `out` left as it was.
pub fn try_write_response(out: &mut Vec<u8>, result: &Value) -> Result<(), RpcError> {
    let start = out.len();
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<methodResponse><params><param>");
    let bad = value(out, result);
    out.extend_from_slice(b"</param></params></methodResponse>\n");
    checked(out, start, bad)
}

/// A `<fault>` response. `faultCode` is an `<int>`, so a code outside 32 bits is
/// clamped to the nearest 32-bit value. `err.data` is not sent: clients (Python's
/// `Fault(**members)` among them) fail on members other than faultCode/faultString.
/// A character XML 1.0 cannot carry in the message is spelled out as `\u{1}`.
pub fn write_fault(out: &mut Vec<u8>, err: &RpcError) {
    let code = err.code.clamp(i32::MIN.into(), i32::MAX.into());
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(
        b"<methodResponse><fault><value><struct>\
          <member><name>faultCode</name><value><int>",
    );
    out.extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
    out.extend_from_slice(
        b"</int></value></member>\
          <member><name>faultString</name><value><string>",
    );
    let _ = escape_into(out, &visible(&err.message));
    out.extend_from_slice(
        b"</string></value></member>\
          </struct></value></fault></methodResponse>\n",
    );
}

/// A `<methodCall>` (for rpcmux's own client and load generator). A character XML 1.0
/// cannot carry is written as a character reference, which the server refuses; use
/// [`try_write_call`] to be told before sending.
pub fn write_call(out: &mut Vec<u8>, method: &str, params: &[Value]) {
    let _ = call(out, method, params);
}

/// A `<methodCall>`, or the error (-32603, "string contains a character XML 1.0 cannot
/// carry (U+0001)") if the method name or a parameter holds such a character, with
/// `out` left as it was.
pub fn try_write_call(out: &mut Vec<u8>, method: &str, params: &[Value]) -> Result<(), RpcError> {
    let start = out.len();
    let bad = call(out, method, params);
    checked(out, start, bad)
}

fn call(out: &mut Vec<u8>, method: &str, params: &[Value]) -> Option<char> {
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<methodCall><methodName>");
    let mut bad = escape_into(out, method);
    out.extend_from_slice(b"</methodName><params>");
    for p in params {
        out.extend_from_slice(b"<param>");
        bad = bad.or(value(out, p));
        out.extend_from_slice(b"</param>");
    }
    out.extend_from_slice(b"</params></methodCall>\n");
    bad
}

pub(crate) fn write_int(out: &mut Vec<u8>, i: i64) {
    let mut buf = itoa::Buffer::new();
    if i32::try_from(i).is_ok() {
        out.extend_from_slice(b"<int>");
        out.extend_from_slice(buf.format(i).as_bytes());
        out.extend_from_slice(b"</int>");
    } else {
        out.extend_from_slice(b"<i8>");
        out.extend_from_slice(buf.format(i).as_bytes());
        out.extend_from_slice(b"</i8>");
    }
}

pub(crate) fn write_double(out: &mut Vec<u8>, d: f64) {
    if d.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(d).as_bytes());
    } else if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else if d > 0.0 {
        out.extend_from_slice(b"inf");
    } else {
        out.extend_from_slice(b"-inf");
    }
}

/// Standard base64 on one line, encoded straight into the buffer.
pub(crate) fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    let engine = &base64::engine::general_purpose::STANDARD;
    let start = out.len();
    // `encoded_len` is None only past usize::MAX, which no Vec<u8> input can reach.
    let len = base64::encoded_len(bytes.len(), true).unwrap_or(0);
    out.resize(start + len, 0);
    let written = engine
        .encode_slice(bytes, &mut out[start..])
        .unwrap_or_default();
    out.truncate(start + written);
}

/// `YYYYMMDDTHH:MM:SS[.fff]`, digit by digit for the years 0..=9999 every client can
/// hold; other years in [`DateTime::to_xmlrpc`]'s expanded form.
fn write_datetime(out: &mut Vec<u8>, d: &DateTime) {
    let t = &d.0;
    let year = match u32::try_from(t.year()) {
        Ok(year) if year <= 9999 => year,
        _ => {
            out.extend_from_slice(d.to_xmlrpc().as_bytes());
            return;
        }
    };
    let digits = |out: &mut Vec<u8>, n: u32, width: u32| {
        for p in (0..width).rev() {
            out.push(b'0' + (n / 10u32.pow(p) % 10) as u8);
        }
    };
    digits(out, year, 4);
    digits(out, t.month(), 2);
    digits(out, t.day(), 2);
    out.push(b'T');
    digits(out, t.hour(), 2);
    out.push(b':');
    digits(out, t.minute(), 2);
    out.push(b':');
    // chrono keeps a leap second as second 59 with nanoseconds from 1e9 up: second 60.
    let nanos = t.nanosecond();
    digits(out, t.second() + nanos / 1_000_000_000, 2);
    // The fraction in 3, 6 or 9 digits, as few as hold it exactly (as chrono's `%.f`).
    match nanos % 1_000_000_000 {
        0 => {}
        f if f % 1_000_000 == 0 => {
            out.push(b'.');
            digits(out, f / 1_000_000, 3);
        }
        f if f % 1_000 == 0 => {
            out.push(b'.');
            digits(out, f / 1_000, 6);
        }
        f => {
            out.push(b'.');
            digits(out, f, 9);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    fn value_xml(v: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn scalars() {
        assert_eq!(value_xml(&Value::Nil), "<value><nil/></value>");
        assert_eq!(
            value_xml(&Value::Bool(true)),
            "<value><boolean>1</boolean></value>"
        );
        assert_eq!(
            value_xml(&Value::Bool(false)),
            "<value><boolean>0</boolean></value>"
        );
        assert_eq!(value_xml(&Value::Int(-7)), "<value><int>-7</int></value>");
        assert_eq!(
            value_xml(&Value::Int(i32::MAX as i64)),
            "<value><int>2147483647</int></value>"
        );
        assert_eq!(
            value_xml(&Value::Int(i32::MIN as i64 - 1)),
            "<value><i8>-2147483649</i8></value>"
        );
        assert_eq!(
            value_xml(&Value::from("a<&>\r")),
            "<value><string>a&lt;&amp;&gt;&#13;</string></value>"
        );
        assert_eq!(
            value_xml(&Value::Bytes(b"\x00\xffhello".to_vec())),
            "<value><base64>AP9oZWxsbw==</base64></value>"
        );
        assert_eq!(
            value_xml(&Value::Bytes(vec![])),
            "<value><base64></base64></value>"
        );
        let d = DateTime::from_ymd_hms(999, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(
            value_xml(&Value::DateTime(d)),
            "<value><dateTime.iso8601>09990102T03:04:05</dateTime.iso8601></value>"
        );
    }

    #[test]
    fn datetimes_keep_fractions_and_every_year() {
        use crate::{parse_response, Limits};
        let at = |y: i32, nanos: u32| {
            let d = chrono::NaiveDate::from_ymd_opt(y, 1, 2).unwrap();
            DateTime(d.and_hms_nano_opt(3, 4, 5, nanos).unwrap())
        };
        let cases = [
            (at(2026, 123_456_000), "20260102T03:04:05.123456"),
            (at(2026, 0), "20260102T03:04:05"),
            (at(2026, 7_000_000), "20260102T03:04:05.007"),
            (at(2026, 1), "20260102T03:04:05.000000001"),
            (at(0, 0), "00000102T03:04:05"),
            (at(9999, 0), "99990102T03:04:05"),
            (at(-1, 0), "-0001-01-02T03:04:05"),
            (at(10000, 0), "+10000-01-02T03:04:05"),
            (at(262142, 5), "+262142-01-02T03:04:05.000000005"),
            (
                DateTime(chrono::NaiveDateTime::MIN),
                "-262143-01-01T00:00:00",
            ),
            (
                DateTime(chrono::NaiveDateTime::MAX),
                "+262142-12-31T23:59:59.999999999",
            ),
        ];
        for (d, text) in cases {
            let v = Value::DateTime(d);
            assert_eq!(
                value_xml(&v),
                format!("<value><dateTime.iso8601>{text}</dateTime.iso8601></value>")
            );
            // The fast writer and DateTime::to_xmlrpc agree, and the reader reads it back.
            assert_eq!(d.to_xmlrpc(), text);
            let mut out = Vec::new();
            write_response(&mut out, &v);
            assert_eq!(
                parse_response(&out, &Limits::DEFAULT).unwrap(),
                Ok(v),
                "{text}"
            );
        }
        // A leap second (chrono: second 59, nanoseconds from 1e9 up) is second 60.
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
            .unwrap();
        assert_eq!(
            value_xml(&Value::DateTime(DateTime(leap))),
            "<value><dateTime.iso8601>20161231T23:59:60.500</dateTime.iso8601></value>"
        );
    }

    #[test]
    fn characters_xml_cannot_carry_are_never_written_silently() {
        let bad = vstruct! {"ok" => "fine", "k" => Value::Array(vec!["a\u{1}b".into()])};
        let err = crate::check_xml_chars(&bad).unwrap_err();
        assert_eq!(
            err.message,
            "Internal error: string contains a character XML 1.0 cannot carry (U+0001)"
        );
        // The fallible writers refuse and leave the buffer as it was.
        let mut out = b"kept".to_vec();
        assert_eq!(try_write_response(&mut out, &bad), Err(err.clone()));
        assert_eq!(try_write_value(&mut out, &bad), Err(err.clone()));
        assert_eq!(
            try_write_call(&mut out, "m", std::slice::from_ref(&bad)),
            Err(err.clone())
        );
        let name_err = try_write_call(&mut out, "m\u{ffff}", &[]).unwrap_err();
        assert!(name_err.message.contains("U+FFFF"), "{name_err}");
        assert_eq!(out, b"kept");
        // A member name counts too.
        let key = vstruct! {"\u{0}" => 1};
        assert!(try_write_response(&mut out, &key).is_err());
        // write_response answers with a fault instead of an unreadable document.
        out.clear();
        write_response(&mut out, &bad);
        let back = crate::parse_response(&out, &crate::Limits::DEFAULT).unwrap();
        assert_eq!(back, Err(RpcError::new(err.code, err.message.clone())));
        // A fault message is text for people: such characters are spelled out.
        out.clear();
        write_fault(&mut out, &RpcError::new(1, "bad \u{1b}[0m\u{fffe}"));
        let back = crate::parse_response(&out, &crate::Limits::DEFAULT).unwrap();
        assert_eq!(back.unwrap_err().message, "bad \\u{1b}[0m\\u{fffe}");
        // Good values: the fallible writers write exactly what the others do.
        let good = vstruct! {"t" => "tab\there\r\n<&>", "u" => "\u{fffd}\u{10ffff}"};
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_response(&mut a, &good);
        try_write_response(&mut b, &good).unwrap();
        assert_eq!(a, b);
        assert!(crate::check_xml_chars(&good).is_ok());
    }

    #[test]
    fn doubles_shortest_and_specials() {
        let cases = [
            (2.5, "2.5"),
            (3.0, "3.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1e-300, "1e-300"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (d, text) in cases {
            assert_eq!(
                value_xml(&Value::Double(d)),
                format!("<value><double>{text}</double></value>")
            );
        }
    }

    #[test]
    fn containers_keep_order() {
        let v = vstruct! {"z" => Value::Array(vec![1.into(), "x".into()]), "a<" => ()};
        assert_eq!(
            value_xml(&v),
            "<value><struct><member><name>z</name><value><array><data>\
             <value><int>1</int></value><value><string>x</string></value>\
             </data></array></value></member><member><name>a&lt;</name>\
             <value><nil/></value></member></struct></value>"
        );
    }

    #[test]
    fn documents() {
        let mut out = Vec::new();
        write_response(&mut out, &Value::Int(1));
        assert_eq!(
            out,
            b"<?xml version=\"1.0\"?>\n<methodResponse><params><param>\
              <value><int>1</int></value></param></params></methodResponse>\n"
        );
        out.clear();
        write_fault(&mut out, &RpcError::new(i64::MIN, "x & y"));
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains("<int>-2147483648</int>"), "{text}");
        assert!(text.contains("<string>x &amp; y</string>"), "{text}");
        out.clear();
        write_call(&mut out, "a.b", &[Value::Nil]);
        assert_eq!(
            out,
            b"<?xml version=\"1.0\"?>\n<methodCall><methodName>a.b</methodName>\
              <params><param><value><nil/></value></param></params></methodCall>\n"
        );
    }
}
