//! `rpcmux call`: one call over any protocol, like `vdsm-client Namespace method k=v`.
//!
//! Exit status: 0 with the result as pretty JSON on stdout; 1 on an error reply
//! (`error CODE: MESSAGE` on stderr); 2 when there is no reply (cannot connect, timeout,
//! connection lost, bad reply, credentials refused) or the command line is wrong.
//! `--tls-ca` (and for mutual TLS `--tls-cert`/`--tls-key`) puts TLS under any protocol;
//! `--user` or `--token-file` logs in to a server with `--auth` (credential_args.rs).

use clap::Args;
use rpcmux::client::{Client, ClientError, ClientProto, ConnectOpts};
use rpcmux::{Map, Params, RpcError, Value};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CallArgs {
    /// Protocol to speak [default: jsonrpc, or jsonrpc-ws for a ws:// or wss:// URL].
    #[arg(long, alias = "protocol", value_enum)]
    proto: Option<ClientProto>,
    /// Seconds to wait for the connection and for the reply.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    #[command(flatten)]
    tls: super::tls_args::TlsArgs,
    #[command(flatten)]
    credentials: super::credential_args::CredentialArgs,
    /// Read the params from a JSON file ('-' for stdin): an array (positional) or an
    /// object (named).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "args"
    )]
    file: Option<PathBuf>,
    /// Server address: HOST:PORT, or a URL: http://HOST:PORT/PATH, ws://HOST:PORT/PATH
    /// (https:// and wss:// with --tls-ca).
    addr: String,
    /// Method to call, e.g. `echo` or `VM.create`.
    method: String,
    /// Params: JSON literals (`5`, `true`, `[1,2]`, `{"a":1}`), anything else as a plain
    /// string; or all as name=value for named params (`vmID=a memSize=1024`).
    #[arg(value_name = "ARG | NAME=VALUE", allow_negative_numbers = true)]
    args: Vec<String>,
}

pub fn run(a: CallArgs) -> ExitCode {
    match prepare(&a) {
        Ok((proto, addr, opts, params)) => {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return fail(&format!("cannot start runtime: {e}")),
            };
            // Params guessed from the command line's words, not given as JSON (-f).
            let words: &[String] = if a.file.is_none() { &a.args } else { &[] };
            rt.block_on(call(proto, &addr, opts, &a.method, params, words))
        }
        Err(e) => fail(&e),
    }
}

async fn call(
    proto: ClientProto,
    addr: &str,
    opts: ConnectOpts,
    method: &str,
    params: Params,
    words: &[String],
) -> ExitCode {
    let tls = opts.tls.as_ref().map(|t| t.client_cert.is_some());
    let client = match Client::connect(proto, addr, opts).await {
        Ok(c) => c,
        Err(e) => return fail(&explain(&e, proto, tls)),
    };
    match client.call(method, params).await {
        Ok(Ok(v)) => {
            println!("{}", pretty(&v));
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            eprintln!("error {}: {}", e.code, e.message);
            if let Some(data) = e.data {
                eprintln!("{}", pretty(&data));
            }
            if e.code == rpcmux::codes::ERR_NOT_AUTHENTICATED {
                eprintln!("rpcmux call: log in with {LOGIN_FLAGS}");
            }
            if e.code == RpcError::INVALID_PARAMS && guessing_could_cause(words, &e.message) {
                eprintln!("rpcmux call: {GUESSED}");
            }
            ExitCode::from(1)
        }
        Err(e) => fail(&explain(&e, proto, tls)),
    }
}

/// The error, and on a second line what probably caused it: the client sees only a
/// closed connection or a TLS alert where the server's log names the cause. `tls` is
/// `Some(has a client certificate)` when the call went over TLS.
fn explain(e: &ClientError, proto: ClientProto, tls: Option<bool>) -> String {
    // An HTTP error body's own newline would leave an empty line before the hint.
    let text = e.to_string().trim_end().to_owned();
    let alert = |name: &str| text.contains(&format!("alert: {name}"));
    let closed = matches!(e, ClientError::Closed(_) | ClientError::NotSent(_))
        || matches!(e, ClientError::Connect(m) if m.contains("closed"));
    let hint = match tls {
        _ if text.contains("HTTP 401") || text.contains("HTTP/1.1 401") => {
            format!("the server wants credentials, or refused these: {LOGIN_FLAGS}")
        }
        _ if text.contains("HTTP 429") || text.contains("HTTP/1.1 429") => "too many failed \
            logins from this address or for this user: the server refuses more for a while"
            .into(),
        // A TLS-only port's answer to plaintext HTTP (its 400 says so).
        None if text.contains("This port requires TLS") => {
            "the server speaks TLS only: add --tls-ca FILE".to_string()
        }
        // The same 400 to a WebSocket upgrade, whose body the client does not show.
        None if text.contains("upgrade refused: HTTP/1.1 400") => "the server speaks TLS \
            only (add --tls-ca FILE), or refused the WebSocket handshake; its log names the \
            cause"
            .to_string(),
        _ if text.contains("Connection refused") => {
            "nothing listens there: is `rpcmux serve` running, on that address?".to_string()
        }
        Some(false) if alert("CertificateRequired") => "the server requires a client \
            certificate: add --tls-cert FILE --tls-key FILE, signed by the CA of the \
            server's --tls-client-ca"
            .into(),
        Some(true)
            if [
                "UnknownCA",
                "BadCertificate",
                "UnsupportedCertificate",
                "CertificateUnknown",
                "DecryptError",
            ]
            .into_iter()
            .any(alert) =>
        {
            "the server refused the client certificate: is it signed by the CA of the \
             server's --tls-client-ca?"
                .into()
        }
        Some(_) if text.contains("UnknownIssuer") => {
            "the server's certificate is not signed by a CA in --tls-ca".into()
        }
        Some(_) if text.contains("not valid for name") || text.contains("NotValidForName") => {
            "the server's certificate does not \
            carry the host name dialled: give the name it carries with --tls-server-name"
                .into()
        }
        Some(_)
            if text.contains("TLS handshake: ")
                && ["eof", "reset by peer", "InvalidContentType"]
                    .iter()
                    .any(|t| text.contains(t)) =>
        {
            "the server does not speak TLS: leave out --tls-ca (or serve TLS with \
             --tls-cert and --tls-key)"
                .into()
        }
        None if closed => format!(
            "the server speaks TLS only (add --tls-ca FILE), or does not serve {proto} \
             (see its --protocol); its log names the cause"
        ),
        _ => return text,
    };
    format!("{text}\nrpcmux call: probably {hint}")
}

/// Whether reading the command line's `words` could explain a -32602 saying `message`:
/// some word was read as something other than the string it spells (a number, a
/// boolean, JSON, a NAME=VALUE pair) and the error is about a parameter's type (or the
/// params were named). A value out of range (`sleep 70000`), a count, or a plain word
/// where a number is wanted (`sleep x`) is not the guessing's doing, and gets no hint.
fn guessing_could_cause(words: &[String], message: &str) -> bool {
    let named = words.iter().any(|w| split_named(w).is_some());
    let typed = words
        .iter()
        .any(|w| !matches!(literal(w), Value::String(_)));
    named || (typed && (message.contains("invalid type") || message.contains("expected")))
}

/// Why params read from the command line may not be what was meant, for a -32602.
const GUESSED: &str = "each argument was read as JSON where it parses (123 a number, true \
    a boolean) and NAME=VALUE as a named param: quote a string as '\"123\"', or give the \
    params as JSON with -f FILE (- for stdin)";

/// How to give credentials, for the hints.
const LOGIN_FLAGS: &str =
    "--user NAME with --password-file FILE (or RPCMUX_PASSWORD), or --token-file FILE (or RPCMUX_TOKEN)";

fn fail(msg: &str) -> ExitCode {
    eprintln!("rpcmux call: {msg}");
    ExitCode::from(2)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("<unprintable: {e}>"))
}

/// The protocol, the address to dial, the options, and the params, from the command line.
fn prepare(a: &CallArgs) -> Result<(ClientProto, String, ConnectOpts, Params), String> {
    let (target, opts) = super::target::connect(&a.addr, a.timeout, &a.tls, &a.credentials)?;
    let proto = a.proto.or(target.proto).unwrap_or(ClientProto::Jsonrpc);
    let params = match &a.file {
        Some(path) => params_from_json(&read_file(path)?)?,
        None => params_from_args(&a.args)?,
    };
    Ok((proto, target.addr, opts, params))
}

fn read_file(path: &PathBuf) -> Result<String, String> {
    let mut text = String::new();
    let r = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    r.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text)
}

/// A JSON array is positional params, an object named ones.
fn params_from_json(text: &str) -> Result<Params, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(a)) => Ok(Params::Positional(a)),
        Ok(Value::Struct(m)) => Ok(Params::Named(*m)),
        Ok(other) => Err(format!(
            "params file must hold a JSON array or object, not {}",
            other.type_name()
        )),
        Err(e) => Err(format!("params file is not JSON: {e}")),
    }
}

/// `ARG...` as positional params, or `NAME=VALUE...` as named ones (not mixed).
fn params_from_args(args: &[String]) -> Result<Params, String> {
    let named: Vec<Option<(&str, &str)>> = args.iter().map(|a| split_named(a)).collect();
    if named.iter().all(Option::is_none) {
        return Ok(Params::Positional(
            args.iter().map(|a| literal(a)).collect(),
        ));
    }
    let mut map = Map::default();
    for (arg, kv) in args.iter().zip(named) {
        let (k, v) = kv.ok_or_else(|| {
            format!("cannot mix positional {arg:?} with name=value params; use -f for JSON params")
        })?;
        map.insert(k.to_string(), literal(v));
    }
    Ok(Params::Named(map))
}

/// `name=value` when `name` looks like a parameter name (so `a=b` in a JSON string or
/// a URL is not taken for one).
fn split_named(arg: &str) -> Option<(&str, &str)> {
    let (k, v) = arg.split_once('=')?;
    let mut chars = k.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() || first == '_')
        .then_some(())
        .filter(|_| chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .map(|_| (k, v))
}

/// A JSON literal, else the text itself as a string (`hello` → "hello", `5` → 5).
fn literal(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quoting_hint_only_where_guessing_could_be_the_cause() {
        let w = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let range = "Invalid params: ms must be between 0 and 60000";
        assert!(!guessing_could_cause(&w(&["70000"]), range));
        let plain = "Invalid params: ms: expected int, got string";
        assert!(!guessing_could_cause(&w(&["x"]), plain));
        let typed = "Invalid params: VM.create: parameter `vmID`: invalid type: integer `1`, expected a string";
        assert!(guessing_could_cause(&w(&["1", "2", "3"]), typed));
        assert!(guessing_could_cause(
            &w(&["a=b"]),
            "Invalid params: no parameter a"
        ));
        assert!(!guessing_could_cause(
            &w(&["a", "b"]),
            "takes at most 1 parameter(s), got 2"
        ));
        assert!(!guessing_could_cause(&[], typed), "-f: nothing was guessed");
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn positional_literals_fall_back_to_strings() {
        let p = params_from_args(&args(&[
            "hello",
            "5",
            "true",
            "[1,\"a\"]",
            "\"5\"",
            "-3",
            "{oops",
        ]))
        .unwrap();
        assert_eq!(
            p,
            Params::Positional(vec![
                "hello".into(),
                5.into(),
                true.into(),
                Value::Array(vec![1.into(), "a".into()]),
                "5".into(),
                (-3).into(),
                "{oops".into(),
            ])
        );
    }

    #[test]
    fn named_params_and_mixing_refused() {
        let Params::Named(m) =
            params_from_args(&args(&["vmID=a", "name=b", "memSize=1024"])).unwrap()
        else {
            panic!()
        };
        assert_eq!(m.get("memSize"), Some(&Value::Int(1024)));
        assert_eq!(m.get("vmID"), Some(&Value::from("a")));
        assert!(params_from_args(&args(&["x=1", "2"])).is_err());
        // '=' inside JSON or after a non-name is positional text.
        assert!(matches!(
            params_from_args(&args(&["{\"a\":\"b=c\"}", "http://x/?a=b"])).unwrap(),
            Params::Positional(_)
        ));
    }

    #[test]
    fn json_file_params() {
        assert!(matches!(params_from_json("[1]"), Ok(Params::Positional(v)) if v.len() == 1));
        assert!(matches!(
            params_from_json("{\"a\":1}"),
            Ok(Params::Named(_))
        ));
        assert!(params_from_json("5").is_err());
        assert!(params_from_json("[").is_err());
    }
}
