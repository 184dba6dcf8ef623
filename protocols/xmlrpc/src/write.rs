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
//! and rpcmux read these back, strict Java readers may not). A dateTime drops fractions
//! of a second: `YYYYMMDDTHH:MM:SS` is the only form Python's client parses.

use crate::escape::escape_into;
use base64::Engine as _;
use chrono::{Datelike, Timelike};
use rpcmux_value::{DateTime, RpcError, Value};

const XML_DECL: &[u8] = b"<?xml version=\"1.0\"?>\n";

/// `<value>…</value>` for one value, recursively.
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
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
            escape_into(out, s);
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
                write_value(out, item);
            }
            out.extend_from_slice(b"</data></array>");
        }
        Value::Struct(map) => {
            out.extend_from_slice(b"<struct>");
            for (name, item) in map {
                out.extend_from_slice(b"<member><name>");
                escape_into(out, name);
                out.extend_from_slice(b"</name>");
                write_value(out, item);
                out.extend_from_slice(b"</member>");
            }
            out.extend_from_slice(b"</struct>");
        }
    }
    out.extend_from_slice(b"</value>");
}

/// A successful `<methodResponse>` holding `result`.
pub fn write_response(out: &mut Vec<u8>, result: &Value) {
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<methodResponse><params><param>");
    write_value(out, result);
    out.extend_from_slice(b"</param></params></methodResponse>\n");
}

/// A `<fault>` response. `faultCode` is an `<int>`, so a code outside 32 bits is
/// clamped to the nearest 32-bit value. `err.data` is not sent: clients (Python's
/// `Fault(**members)` among them) fail on members other than faultCode/faultString.
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
    escape_into(out, &err.message);
    out.extend_from_slice(
        b"</string></value></member>\
          </struct></value></fault></methodResponse>\n",
    );
}

/// A `<methodCall>` (for rpcmux's own client and load generator).
pub fn write_call(out: &mut Vec<u8>, method: &str, params: &[Value]) {
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<methodCall><methodName>");
    escape_into(out, method);
    out.extend_from_slice(b"</methodName><params>");
    for p in params {
        out.extend_from_slice(b"<param>");
        write_value(out, p);
        out.extend_from_slice(b"</param>");
    }
    out.extend_from_slice(b"</params></methodCall>\n");
}

fn write_int(out: &mut Vec<u8>, i: i64) {
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

fn write_double(out: &mut Vec<u8>, d: f64) {
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
fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
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

/// `YYYYMMDDTHH:MM:SS`, digit by digit for the years 0..=9999 every client can hold.
fn write_datetime(out: &mut Vec<u8>, d: &DateTime) {
    let t = &d.0;
    let Ok(year) = u32::try_from(t.year()) else {
        out.extend_from_slice(d.to_xmlrpc().as_bytes());
        return;
    };
    if year > 9999 {
        out.extend_from_slice(d.to_xmlrpc().as_bytes());
        return;
    }
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
    // chrono keeps a leap second as second 59 with extra nanoseconds; nothing to do.
    digits(out, t.second(), 2);
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
