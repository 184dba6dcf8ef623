//! `rpc.discover`'s document through the official OpenRPC code generator
//! (`@open-rpc/generator`, installed in tests/node by scripts/setup-test-env): a
//! document that validators accept can still crash it (an array schema without `items`
//! did), and generating clients is what users do with the document.

use crate::common;
use crate::common::{repo, Server};
use std::process::Command;

/// Every schema in `v` that says `"type": "array"` has `items`, with its JSON path.
fn arrays_without_items(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if m.get("type") == Some(&serde_json::json!("array")) && !m.contains_key("items") {
                out.push(path.to_string());
            }
            for (k, v) in m {
                arrays_without_items(v, &format!("{path}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                arrays_without_items(v, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn the_official_generator_builds_clients_from_rpc_discover() {
    let srv = Server::start(&[]);
    let (status, _, body) = common::http_post(
        srv.addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#,
    );
    assert_eq!(status, 200);
    let doc = common::json(&body)["result"].clone();

    let mut bare = Vec::new();
    arrays_without_items(&doc, "", &mut bare);
    assert!(bare.is_empty(), "array schemas without items: {bare:?}");
    let method = |name: &str| {
        doc["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not described"))
            .clone()
    };
    assert_eq!(
        method("system.listMethods")["result"]["schema"]["items"]["type"],
        "string"
    );
    assert_eq!(
        method("system.multicall")["params"][0]["schema"]["items"]["required"],
        serde_json::json!(["methodName"])
    );

    let node_dir = repo().join("tests/node");
    let cli = node_dir.join("node_modules/@open-rpc/generator/build/cli.js");
    assert!(
        cli.exists(),
        "{} missing: run scripts/setup-test-env (npm ci in tests/node)",
        cli.display()
    );
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("openrpc-generator-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let doc_path = work.join("openrpc.json");
    std::fs::write(&doc_path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out_dir = work.join("out");
    let config = serde_json::json!({
        "openrpcDocument": doc_path,
        "outDir": out_dir,
        "components": [
            {"type": "client", "language": "typescript", "name": "rpcmux-client"},
            {"type": "client", "language": "rust", "name": "rpcmux-client"},
        ],
    });
    let config_path = work.join("generator.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    let node = std::env::var("RPCMUX_NODE").unwrap_or_else(|_| "node".into());
    let run = Command::new(node)
        .arg(&cli)
        .args(["generate", "-c"])
        .arg(&config_path)
        .current_dir(&work)
        .output()
        .expect("run node");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    // It prints its crash and still says nothing on stderr: the status and the files tell.
    assert!(
        run.status.success(),
        "open-rpc-generator failed ({}):\nstdout:\n{}\nstderr:\n{}",
        run.status,
        text(&run.stdout),
        text(&run.stderr)
    );
    let ts = std::fs::read_to_string(out_dir.join("client/typescript/src/index.ts"))
        .expect("the TypeScript client");
    for name in ["system.multicall", "system.listMethods", "VM.create"] {
        assert!(
            ts.contains(name),
            "{name} missing from the TypeScript client"
        );
    }
    let rs =
        std::fs::read_to_string(out_dir.join("client/rust/src/index.rs")).expect("the Rust client");
    assert!(rs.contains("fn SystemMethodSignature"), "{rs}");
    let _ = std::fs::remove_dir_all(&work);
}
