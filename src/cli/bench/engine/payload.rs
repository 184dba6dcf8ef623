//! What a bench call sends, and the result it must get back.

use rpcmux_value::{Params, Value};

/// One call repeated for the whole run.
#[derive(Debug, Clone)]
pub struct Payload {
    /// A short name for reports (`ping`, `musicentry`, or the file name).
    pub name: String,
    pub method: String,
    pub params: Params,
    /// The only correct result; a different one counts as an error. `None`: any result.
    pub expect: Option<Value>,
}

/// The MusicEntry struct of the classic XML-RPC benchmarks
/// (`shared/reference/payload.py`), as the one param of `echo`.
const MUSIC_ENTRY: &str = r#"["MusicEntry", {
    "email": "lalcorn@ultranet", "time": "7:30pm", "tickets": "", "program": "",
    "state": "MA", "start": "2002-01-26", "venueurl": "", "country": "",
    "performers": ["An Evening with Karen Savoca"], "addressid": 7283, "name": "",
    "zip": "", "city": "Sudbury",
    "info": "Reservations required. Please call (978)443-3253 or e-mail Laurie at lal...@ultranet.com.",
    "merchandise": [], "event": "", "keywords": [".zyx.41"], "submit_time": "2001-08-28",
    "key": 325629, "active": 1, "end": "2002-01-26", "price": "$17", "address3": "",
    "address1": "", "venue": "Fox Run House Concerts", "address2": "",
    "update_time": "2001-09-22:19:28:44"}]"#;

impl Payload {
    /// `ping()`, which must answer `true`.
    pub fn ping() -> Payload {
        Payload {
            name: "ping".into(),
            method: "ping".into(),
            params: Params::default(),
            expect: Some(Value::Bool(true)),
        }
    }

    /// `echo(MusicEntry)`, which must answer the MusicEntry unchanged.
    pub fn music_entry() -> Payload {
        let v: Value = serde_json::from_str(MUSIC_ENTRY).expect("MusicEntry is valid JSON");
        Payload::echo("musicentry", v)
    }

    /// `echoMusicEntry(MusicEntry)`: the same bytes as [`Payload::music_entry`], to
    /// the typed verb that reads them into a Rust struct and writes it back.
    pub fn music_entry_typed() -> Payload {
        Payload {
            name: "musicentry-typed".into(),
            method: "echoMusicEntry".into(),
            ..Payload::music_entry()
        }
    }

    /// `echo(value)`, checked.
    pub fn echo(name: &str, value: Value) -> Payload {
        Payload {
            name: name.into(),
            method: "echo".into(),
            params: Params::Positional(vec![value.clone()]),
            expect: Some(value),
        }
    }

    /// `ping`, `musicentry`, `musicentry-typed`, or a JSON file: either a JSON-RPC request object
    /// (`{"method": …, "params": …}`, as in `benches/data/jsonrpc_echo_req.json`) or any
    /// other JSON value, which is echoed. An `echo` of one param expects it back.
    pub fn parse(spec: &str) -> Result<Payload, String> {
        match spec {
            "ping" => return Ok(Payload::ping()),
            "musicentry" => return Ok(Payload::music_entry()),
            "musicentry-typed" => return Ok(Payload::music_entry_typed()),
            _ => {}
        }
        let text = std::fs::read_to_string(spec).map_err(|e| format!("payload {spec}: {e}"))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("payload {spec}: not JSON: {e}"))?;
        let name = std::path::Path::new(spec)
            .file_name()
            .map_or(spec.to_string(), |n| n.to_string_lossy().into_owned());
        let Some(Value::String(method)) = v.get("method").cloned() else {
            return Ok(Payload::echo(&name, v));
        };
        let params = match v.get("params").cloned() {
            None => Params::default(),
            Some(Value::Array(a)) => Params::Positional(a),
            Some(Value::Struct(m)) => Params::Named(*m),
            Some(other) => {
                return Err(format!(
                    "payload {spec}: params must be an array or object, not {}",
                    other.type_name()
                ))
            }
        };
        let expect = match (&*method, &params) {
            ("echo", Params::Positional(a)) if a.len() == 1 => Some(a[0].clone()),
            ("ping", _) => Some(Value::Bool(true)),
            _ => None,
        };
        Ok(Payload {
            name,
            method: method.into_string(),
            params,
            expect,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn music_entry_matches_the_shared_request_file() {
        let p = Payload::music_entry();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/data/jsonrpc_echo_req.json"
        );
        let from_file = Payload::parse(path).unwrap();
        assert_eq!(from_file.method, "echo");
        assert_eq!(from_file.params, p.params);
        assert_eq!(from_file.expect, p.expect);
        assert_eq!(
            p.expect.as_ref().and_then(|v| v.as_array()).map(<[_]>::len),
            Some(2)
        );
    }

    #[test]
    fn names() {
        assert_eq!(Payload::parse("ping").unwrap().method, "ping");
        assert!(Payload::parse("/no/such/file").is_err());
    }
}
