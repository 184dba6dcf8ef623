//! docs/rpcmux.toml, the sample config file, and docs/config.md, its reference, kept true:
//! the sample holds every setting `Config` has, each at its default (a library's: no demo
//! verbs, as a production sample should), every one of them is documented, and `rpcmux
//! serve --config` runs with it. A setting added to `Config`
//! fails these tests until it is in both files.

use crate::common::{http_post, json, Server};
use rpcmux::{Config, TlsMode};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn doc(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name)
}

fn sample() -> String {
    std::fs::read_to_string(doc("rpcmux.toml")).unwrap()
}

/// The sample with its commented-out settings (`#key = ...`, no space) switched on.
fn sample_uncommented() -> String {
    sample()
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every key in a TOML document, tables' names and their keys alike.
fn toml_keys(table: &toml::Table, out: &mut BTreeSet<String>) {
    for (k, v) in table {
        out.insert(k.clone());
        if let toml::Value::Table(t) = v {
            toml_keys(t, out);
        }
    }
}

/// Every field name in `Config`'s Debug output (`name: value`), nested structs included:
/// the settings the config file can hold, as the code has them.
fn config_fields() -> BTreeSet<String> {
    let text = format!("{:?}", Config::default());
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices(": ") {
        let start = text[..i]
            .rfind(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .map_or(0, |p| p + 1);
        let before = &text[..start];
        if start < i && (before.ends_with("{ ") || before.ends_with(", ")) {
            out.insert(text[start..i].to_string());
        }
    }
    out
}

#[test]
fn the_sample_is_every_default() {
    let c = Config::from_toml(&sample()).unwrap();
    assert_eq!(format!("{c:?}"), format!("{:?}", Config::default()));
    assert!(!c.demo);
    // A few by name, so a failure says more than two long lines.
    assert_eq!(c.listen, ["127.0.0.1:54321".parse().unwrap()]);
    assert_eq!(c.limits.max_body, 16 << 20);
    assert_eq!(c.limits.max_connections, 10_000);
    assert_eq!(c.tls.mode(), TlsMode::Off);
}

#[test]
fn the_commented_settings_are_real_ones() {
    let c = Config::from_toml(&sample_uncommented()).unwrap();
    assert_eq!(
        c.tls.cert.as_deref(),
        Some(std::path::Path::new("/etc/rpcmux/server.pem"))
    );
    assert!(c.tls.key.is_some() && c.tls.client_ca.is_some());
    assert_eq!(c.tls.mode(), TlsMode::Required);
}

#[test]
fn the_sample_and_the_reference_name_every_setting() {
    let fields = config_fields();
    assert!(fields.contains("max_connections") && fields.contains("handshake_timeout"));
    let mut keys = BTreeSet::new();
    toml_keys(&sample_uncommented().parse().unwrap(), &mut keys);
    assert_eq!(
        keys, fields,
        "docs/rpcmux.toml must hold every Config field (left: the file, right: Config)"
    );
    let reference = std::fs::read_to_string(doc("config.md")).unwrap();
    let missing: Vec<_> = keys
        .iter()
        .filter(|k| {
            !reference.contains(&format!("`{k}`")) && !reference.contains(&format!("`[{k}]`"))
        })
        .collect();
    assert!(missing.is_empty(), "not in docs/config.md: {missing:?}");
}

#[test]
fn serve_runs_with_the_sample() {
    let path = doc("rpcmux.toml");
    let srv = Server::start(&[
        "--config",
        path.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let (status, _, body) = http_post(
        srv.addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
    );
    assert_eq!(status, 200);
    assert_eq!(json(&body)["error"]["code"], -32601, "no demo verbs");
}
