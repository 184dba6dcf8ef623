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

/// `rpcmux serve ARGS` that must not start: exit 2, nothing listened; its stderr.
fn refused(args: &[&str]) -> String {
    let out = rpcmux().args(args).stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing listened");
    err
}

/// Config that means what it looks like: each pitfall refused, exit 2, the message
/// naming the fix.
#[test]
fn config_pitfalls_are_refused_naming_the_fix() {
    let dir = crate::common::temp_dir("pitfalls");
    let toml = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_owned()
    };
    // `mode = 660` is the decimal 660 (0o1224, sticky and -w--w-r--), not 0o660.
    let f = toml("mode.toml", "[unix]\nmode = 660\n");
    let err = refused(&["serve", "--config", &f]);
    assert!(err.contains("0o1224"), "{err}");
    assert!(err.contains("mode = 0o660 or mode = \"660\""), "{err}");
    let f = toml("setgid.toml", "[unix]\nmode = 0o2770\n");
    assert!(refused(&["serve", "--config", &f]).contains("setgid"));
    // Every duration: negative refused, in the file and on the command line.
    let f = toml("idle.toml", "[limits]\nidle_timeout = -1\n");
    let err = refused(&["serve", "--config", &f]);
    assert!(
        err.contains("expected seconds, 0 or more (0 = off"),
        "{err}"
    );
    let f = toml("ping.toml", "[websocket]\nping_interval = -0.5\n");
    assert!(refused(&["serve", "--config", &f]).contains("0 = off"));
    let err = refused(&["serve", "--idle-timeout=-1"]);
    assert!(
        err.contains("expected seconds, 0 or more (0 = off"),
        "{err}"
    );
    assert!(refused(&["serve", "--slow-call=-2"]).contains("0 = off"));
    // A bad credentials file is a bad config: 2, as --help says, not 1.
    let f = toml("credentials.toml", "[users.alice]\npassword = 42\n");
    let err = refused(&["serve", "--listen", "127.0.0.1:0", "--auth", &f]);
    assert!(err.contains("credentials.toml"), "{err}");
    // `--port` is no flag: the port goes in --listen (clap offered --proto).
    let err = refused(&["serve", "--port", "8080"]);
    assert!(err.contains("--listen 127.0.0.1:8080"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--idle-timeout 0` is off, as 0 is for every duration: a connection stays open
/// after its reply (it was closed right after it). Every other duration at 0 too: the
/// server serves and stops as usual.
#[test]
fn idle_timeout_0_is_off() {
    use std::io::{BufRead, BufReader, Write};
    let mut srv = Server::start(&[
        "--idle-timeout",
        "0",
        "--sniff-timeout",
        "0",
        "--body-timeout",
        "0",
        "--send-timeout",
        "0",
        "--shutdown-timeout",
        "0",
        "--slow-call",
        "0",
        "--drain-delay",
        "0",
        "--ws-ping-interval",
        "0",
        "--ws-pong-timeout",
        "0",
    ]);
    let (status, _, body) = http_post(
        srv.addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
    );
    assert_eq!((status, &json(&body)["result"]), (200, &true.into()));
    let s = std::net::TcpStream::connect(srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for id in 1..=2 {
        w.write_all(
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":{id}}}\n").as_bytes(),
        )
        .unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(json(line.as_bytes())["id"], id, "call {id}: {line:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    drop((w, r));
    srv.sigterm();
    assert!(srv.wait_exit(Duration::from_secs(20)).success());
}
