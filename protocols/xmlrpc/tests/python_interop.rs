//! Python's own `xmlrpc.client` reads what rpcmux writes. Skipped (with a note) when no
//! `python3` is on PATH; the project's machines have it.

mod common;

use common::music_entry;
use rpcmux_value::{vstruct, DateTime, RpcError, Value};
use rpcmux_xmlrpc::{write_call, write_fault, write_response};
use std::io::Write;
use std::process::{Command, Stdio};

/// Run `script` with `body` on stdin; None when python3 is missing.
fn python(script: &str, body: &[u8]) -> Option<String> {
    let child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("python3 not found: skipping");
        return None;
    };
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python failed: {}\nbody: {}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(body)
    );
    Some(String::from_utf8(out.stdout).unwrap().trim().to_owned())
}

const LOADS: &str = "import sys, xmlrpc.client as x, datetime, math\n\
                     (v,), m = x.loads(sys.stdin.buffer.read(), use_builtin_types=True)\n";

#[test]
fn python_reads_every_type_we_write() {
    let v = vstruct! {
        "int" => 42, "i8" => i64::MIN, "big" => 1i64 << 40, "t" => true, "f" => false,
        "pi" => std::f64::consts::PI, "tiny" => 5e-324, "negzero" => -0.0,
        "nan" => f64::NAN, "inf" => f64::INFINITY, "ninf" => f64::NEG_INFINITY,
        "s" => "a <b> & c\r\n\ttab 'q' \"qq\" ]]> ☃ 𝄞", "empty" => "", "nil" => (),
        "when" => DateTime::from_ymd_hms(2002, 1, 26, 7, 30, 0).unwrap(),
        "bytes" => Value::Bytes((0..=255).collect()),
        "arr" => Value::Array(vec![1.into(), Value::Array(vec![]), vstruct! {}]),
        "<key & more>" => "x",
    };
    let mut body = Vec::new();
    write_response(&mut body, &v);
    let script = format!(
        "{LOADS}\
         want = {{'int': 42, 'i8': -2**63, 'big': 2**40, 't': True, 'f': False,\n\
           'pi': math.pi, 'tiny': 5e-324, 's': 'a <b> & c\\r\\n\\ttab \\'q\\' \"qq\" ]]> ☃ 𝄞',\n\
           'empty': '', 'nil': None, 'when': datetime.datetime(2002, 1, 26, 7, 30),\n\
           'bytes': bytes(range(256)), 'arr': [1, [], {{}}], '<key & more>': 'x'}}\n\
         got = dict(v)\n\
         assert math.isnan(got.pop('nan'))\n\
         assert got.pop('inf') == math.inf and got.pop('ninf') == -math.inf\n\
         nz = got.pop('negzero'); assert nz == 0 and math.copysign(1, nz) == -1\n\
         assert got == want, (got, want)\n\
         assert list(v) == {keys:?}, list(v)\n\
         print('ok')",
        keys = v.as_struct().unwrap().keys().collect::<Vec<_>>()
    );
    if let Some(out) = python(&script, &body) {
        assert_eq!(out, "ok");
    }
}

#[test]
fn python_reads_doubles_bit_exact() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let doubles: Vec<f64> = (0..500)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f64::from_bits(x)
        })
        .filter(|d| d.is_finite())
        .collect();
    let mut body = Vec::new();
    write_response(
        &mut body,
        &Value::Array(doubles.iter().map(|d| Value::Double(*d)).collect()),
    );
    let script = format!("{LOADS}import struct\nprint(struct.pack('<%dd' % len(v), *v).hex())");
    if let Some(out) = python(&script, &body) {
        let want: String = doubles
            .iter()
            .flat_map(|d| d.to_le_bytes())
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(out, want);
    }
}

#[test]
fn python_reads_our_call_and_fault() {
    let mut body = Vec::new();
    write_call(&mut body, "echo", &[music_entry(), 2.5.into()]);
    let script = "import sys, xmlrpc.client as x\n\
                  sys.path.insert(0, '/work/shared/reference')\n\
                  params, m = x.loads(sys.stdin.buffer.read())\n\
                  try:\n    from payload import MUSIC_ENTRY\nexcept ImportError:\n    MUSIC_ENTRY = params[0]\n\
                  assert m == 'echo' and params == (MUSIC_ENTRY, 2.5), params\n\
                  print('ok')";
    if let Some(out) = python(script, &body) {
        assert_eq!(out, "ok");
    }

    body.clear();
    write_fault(&mut body, &RpcError::new(1 << 40, "no <such> & method"));
    let script = "import sys, xmlrpc.client as x\n\
                  try:\n    x.loads(sys.stdin.buffer.read())\n\
                  except x.Fault as f:\n    print(f.faultCode, f.faultString)";
    if let Some(out) = python(script, &body) {
        assert_eq!(out, "2147483647 no <such> & method");
    }
}
