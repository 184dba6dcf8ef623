//! `rpcmux serve` as an operator first meets it: host names in `--listen` and in the
//! config file, and a log without colour codes unless a person is watching a terminal.

use crate::common::{http_post, json, Server};
use std::collections::BTreeSet;
use std::net::{IpAddr, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::time::Duration;

fn rpcmux() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rpcmux"))
}

/// The loopback addresses `localhost` resolves to here (127.0.0.1, often ::1 too).
fn localhost_ips() -> BTreeSet<IpAddr> {
    ("localhost", 0)
        .to_socket_addrs()
        .unwrap()
        .map(|a| a.ip())
        .collect()
}

fn assert_serves_localhost(srv: &Server) {
    let ips: BTreeSet<IpAddr> = srv.addrs.iter().map(|a| a.ip()).collect();
    assert_eq!(ips, localhost_ips(), "every address of localhost is bound");
    for addr in &srv.addrs {
        let (status, _, body) = http_post(
            *addr,
            Some("application/json"),
            br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
        );
        assert_eq!(
            (status, &json(&body)["result"]),
            (200, &true.into()),
            "{addr}"
        );
    }
}

#[test]
fn listen_takes_a_host_name() {
    let mut cmd = rpcmux();
    cmd.args(["serve", "--listen", "localhost:0"]);
    let srv = Server::spawn_listeners(cmd, localhost_ips().len());
    assert_serves_localhost(&srv);
}

#[test]
fn the_config_file_listen_takes_a_host_name() {
    let dir = std::env::temp_dir().join(format!("rpcmux-listen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rpcmux.toml");
    std::fs::write(&file, "listen = [\"localhost:0\"]\n").unwrap();
    let mut cmd = rpcmux();
    cmd.args(["serve", "--config", file.to_str().unwrap()]);
    let srv = Server::spawn_listeners(cmd, localhost_ips().len());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_serves_localhost(&srv);
}

#[test]
fn an_unusable_listen_address_is_a_clear_startup_error() {
    for spec in ["no-such-host.invalid:54321", "localhost", "localhost:port"] {
        let out = rpcmux()
            .args(["serve", "--listen", spec])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(&format!("listen {spec}: ")), "{spec}: {err}");
        assert!(out.stdout.is_empty(), "{spec}: nothing listened");
    }
}

/// Start the server, stop it with SIGTERM: its whole log (the `stopped` line at least).
fn start_and_stop(cmd: Command) -> String {
    let mut srv = Server::spawn_command(cmd, &[]);
    srv.sigterm();
    assert!(srv.wait_exit(Duration::from_secs(20)).success());
    assert!(
        srv.wait_log("stopped", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
    srv.log()
}

#[test]
fn the_log_has_no_colour_codes_in_a_pipe() {
    let mut cmd = rpcmux();
    // Unset: tracing-subscriber honours NO_COLOR itself, which would hide the bug.
    cmd.env_remove("NO_COLOR")
        .args(["serve", "--listen", "127.0.0.1:0"]);
    let log = start_and_stop(cmd);
    assert!(log.contains("INFO"), "{log}");
    assert!(!log.contains("\x1b["), "{log:?}");
}

/// The server's whole output when run on a terminal: `script` (util-linux, in every
/// Debian) gives it a pseudo-terminal; `timeout` stops it with SIGTERM after 2 s.
fn on_a_terminal(no_color: Option<&str>) -> String {
    let bin = env!("CARGO_BIN_EXE_rpcmux");
    let mut cmd = Command::new("script");
    cmd.args(["-qec"])
        .arg(format!(
            "timeout -s TERM 2 {bin} serve --listen 127.0.0.1:0"
        ))
        .arg("/dev/null")
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let out = cmd.output().expect("run script(1)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("stopped"), "{text:?}");
    text
}

#[test]
fn the_log_is_coloured_on_a_terminal_unless_no_color() {
    assert!(on_a_terminal(None).contains("\x1b["));
    assert!(!on_a_terminal(Some("1")).contains("\x1b["));
}
