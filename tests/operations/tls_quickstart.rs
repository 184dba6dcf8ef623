//! The README's TLS quick start, as a user runs it: `scripts/tls-quickstart DIR` makes a
//! CA and certificates with openssl and prints a `rpcmux serve` and a `rpcmux call` line;
//! those very lines (port aside) must give a mutual-TLS server and a call that gets
//! through with the client certificate, and only with it.

use crate::common;
use crate::common::Server;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The printed line starting `rpcmux VERB `, as arguments after `rpcmux`.
fn printed(script_out: &str, verb: &str) -> Vec<String> {
    let line = script_out
        .lines()
        .find(|l| l.starts_with(&format!("rpcmux {verb} ")))
        .unwrap_or_else(|| panic!("no `rpcmux {verb}` line in {script_out}"));
    line.split_whitespace().skip(1).map(String::from).collect()
}

fn rpcmux(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_quickstart_lines_give_mutual_tls() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("rpcmux-quickstart-{}", std::process::id()));
    let out = Command::new(repo.join("scripts/tls-quickstart"))
        .arg(&dir)
        .output()
        .expect("run scripts/tls-quickstart (needs bash and openssl)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut serve = printed(&text, "serve");
    assert!(serve.contains(&"--tls-client-ca".to_string()), "{serve:?}");
    // Its own port, beside a plaintext server on the default one; here a free one.
    let listen = serve
        .iter_mut()
        .find(|a| a.as_str() == "127.0.0.1:54323")
        .expect("the serve line listens on 127.0.0.1:54323");
    *listen = "127.0.0.1:0".into();
    // `Server::start` says `serve` itself.
    let srv = Server::start(&serve[1..].iter().map(String::as_str).collect::<Vec<_>>());

    // The call as printed, at the test server's port; `localhost` checks the name too.
    let mut call = printed(&text, "call");
    let addr = call
        .iter_mut()
        .find(|a| a.as_str() == "localhost:54323")
        .expect("the call line dials localhost:54323");
    *addr = format!("localhost:{}", srv.port());
    let out = rpcmux(&call);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let who = common::json(stdout.as_bytes());
    assert_eq!(who["identity"], "rpcmux-client", "{who}");

    // Without the client certificate the handshake fails; plaintext is refused.
    let strip = |flags: &[&str]| -> Vec<String> {
        let mut out = Vec::new();
        let mut it = call.iter();
        while let Some(a) = it.next() {
            if flags.contains(&a.as_str()) {
                it.next();
            } else {
                out.push(a.clone());
            }
        }
        out
    };
    for (what, args) in [
        ("no client certificate", strip(&["--tls-cert", "--tls-key"])),
        ("plaintext", strip(&["--tls-cert", "--tls-key", "--tls-ca"])),
    ] {
        let out = rpcmux(&args);
        assert_eq!(out.status.code(), Some(2), "{what}: {args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
