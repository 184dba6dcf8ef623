//! systemd integration, end to end, with this test standing in for systemd: it binds
//! the listening socket and passes it to the real binary as fd 3 (`LISTEN_FDS=1`,
//! `LISTEN_PID` the server's own pid), and reads the notifications the server sends to
//! `NOTIFY_SOCKET`, a Unix datagram socket it bound (READY, RELOADING on SIGHUP,
//! STOPPING on SIGTERM).
#![cfg(target_os = "linux")]

use crate::common::*;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A notification socket in a fresh directory (removed on drop).
struct Notify {
    dir: PathBuf,
    socket: UnixDatagram,
}

impl Notify {
    fn new(tag: &str) -> Notify {
        let dir = std::env::temp_dir().join(format!("rpcmux-sd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let socket = UnixDatagram::bind(dir.join("notify")).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Notify { dir, socket }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("notify")
    }

    /// The next notification, as text.
    fn next(&self) -> String {
        let mut buf = [0u8; 4096];
        let n = self.socket.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `rpcmux serve <args>` as systemd would start it for a socket unit: `listener` as fd 3,
/// `LISTEN_FDS=1`, and `LISTEN_PID` set to the server's pid by a shell that then execs
/// the server (the pid stays; the environment of a forked child cannot safely be
/// changed before exec from Rust, since `Command` has already built it).
fn activated(listener: &TcpListener, notify: &Notify, args: &[&str]) -> Server {
    let fd: RawFd = listener.as_raw_fd();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"LISTEN_PID=$$ exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_rpcmux"))
        .arg("serve")
        .args(args)
        .env("LISTEN_FDS", "1")
        .env("NOTIFY_SOCKET", notify.path());
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let r = if fd == 3 {
                // Already fd 3: only drop the close-on-exec flag std sets on sockets.
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                // dup2 leaves close-on-exec off on the new descriptor.
                libc::dup2(fd, 3)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    Server::spawn_command(cmd, &all)
}

/// CLOCK_MONOTONIC in microseconds, as systemd reads it.
fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

fn ping(addr: SocketAddr) -> serde_json::Value {
    let (status, _, body) = http_post(
        addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
    );
    assert_eq!(status, 200);
    json(&body)["result"].clone()
}

#[test]
fn serves_the_passed_socket_and_notifies_ready_reloading_and_stopping() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let notify = Notify::new("ready");
    let mut srv = activated(&listener, &notify, &[]);
    // The passed socket replaces the default address: it is the only one served.
    assert_eq!(srv.addrs, vec![addr]);
    assert_eq!(
        notify.next(),
        format!("READY=1\nSTATUS=listening on {addr}")
    );
    // The test's own copy of the socket stays open; close it so only the server accepts.
    drop(listener);
    assert_eq!(ping(addr), true);

    // SIGHUP (`systemctl reload`, or systemd itself under Type=notify-reload): RELOADING=1
    // stamped on the clock systemd reads, then READY=1 with the outcome, and no exit.
    let before = monotonic_usec();
    srv.sighup();
    let reloading = notify.next();
    let stamp: u64 = reloading
        .strip_prefix("RELOADING=1\nMONOTONIC_USEC=")
        .unwrap_or_else(|| panic!("{reloading:?}"))
        .parse()
        .unwrap();
    assert!(
        stamp >= before && stamp < before + 10_000_000,
        "{stamp} vs {before}"
    );
    assert_eq!(
        notify.next(),
        format!("READY=1\nSTATUS=listening on {addr}; nothing to reload")
    );
    assert_eq!(ping(addr), true);

    srv.sigterm();
    assert_eq!(notify.next(), "STOPPING=1\nSTATUS=shutting down");
    assert!(srv.wait_exit(Duration::from_secs(20)).success());
}

#[test]
fn an_explicit_listen_address_is_served_beside_the_passed_socket() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let notify = Notify::new("both");
    let srv = activated(&listener, &notify, &["--listen", "127.0.0.1:0"]);
    let ready = notify.next();
    let status = ready
        .strip_prefix("READY=1\nSTATUS=listening on ")
        .unwrap_or_else(|| panic!("{ready:?}"));
    let served: Vec<SocketAddr> = status.split(", ").map(|a| a.parse().unwrap()).collect();
    assert_eq!(served.len(), 2, "{ready:?}");
    assert_eq!(served[0], addr, "the passed socket comes first");
    drop(listener);
    for a in served {
        assert_eq!(ping(a), true, "{a}");
    }
    drop(srv);
}

/// The lines of a systemd unit that set `key` (`Key=value`, comments skipped).
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().to_owned())
        .collect()
}

/// docs/rpcmux.service, docs/rpcmux.socket and docs/rpcmux.toml as shipped, started
/// together by `systemd-socket-activate` (systemd's own tool, binding the socket unit's
/// address and passing it in as a `ListenStream=` unit does) running the service's
/// `ExecStart=` with the sample copied to an `/etc/rpcmux`-like folder. The socket's
/// address is also the config's `listen`: served once, on the passed socket (it failed
/// with "address in use" before). The sample is a production one: no demo verbs. The
/// address is moved to a free port in both copies alike, so the test binds no fixed port.
#[test]
fn the_shipped_samples_start_together() {
    let docs = repo().join("docs");
    let read = |name: &str| std::fs::read_to_string(docs.join(name)).unwrap();
    let (service, socket, sample) = (
        read("rpcmux.service"),
        read("rpcmux.socket"),
        read("rpcmux.toml"),
    );
    let streams = unit_values(&socket, "ListenStream");
    assert_eq!(streams.len(), 1, "{streams:?}");
    let config = rpcmux::Config::from_toml(&sample).unwrap();
    assert_eq!(
        config
            .listen
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        streams,
        "the sample config listens where the socket unit does"
    );
    assert!(!config.demo, "a production sample serves no demo verbs");
    assert!(unit_values(&service, "Requires").contains(&"rpcmux.socket".to_owned()));
    assert!(
        unit_values(&service, "Documentation").is_empty(),
        "no URL answers yet"
    );
    let exec = unit_values(&service, "ExecStart");
    let args: Vec<&str> = exec[0].split_whitespace().skip(1).collect();
    assert_eq!(
        args,
        [
            "serve",
            "--config",
            "/etc/rpcmux/rpcmux.toml",
            "--events-dir",
            "/var/lib/rpcmux"
        ]
    );
    assert!(
        unit_values(&service, "StateDirectory").contains(&"rpcmux".to_owned()),
        "systemd makes the events dir"
    );
    let state = temp_dir("samples-state");
    let state = state.to_str().unwrap().to_owned();

    let etc = temp_dir("samples").join("etc/rpcmux");
    std::fs::create_dir_all(&etc).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let copy = etc.join("rpcmux.toml");
    std::fs::write(&copy, sample.replace(&streams[0], &addr.to_string())).unwrap();
    let copy = copy.to_str().unwrap();
    let args: Vec<&str> = args
        .iter()
        .map(|a| match *a {
            "/etc/rpcmux/rpcmux.toml" => copy,
            "/var/lib/rpcmux" => state.as_str(),
            a => a,
        })
        .collect();
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.args(["-E", "RUST_LOG=info", "-l", &addr.to_string()])
        .arg(env!("CARGO_BIN_EXE_rpcmux"))
        .args(&args);
    // The server starts at the first connection; wait for the tool to bind first.
    let starting = std::thread::spawn(move || Server::spawn_listeners(cmd, 1));
    let end = std::time::Instant::now() + Duration::from_secs(20);
    let mut first = loop {
        match std::net::TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(_) if std::time::Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("systemd-socket-activate does not listen on {addr}: {e}"),
        }
    };
    let srv = starting.join().expect("the activated server");
    assert_eq!(srv.addrs, vec![addr], "the one address, served once");
    assert!(srv.log().contains("served once"), "{}", srv.log());
    use std::io::{Read, Write};
    let body = br#"{"jsonrpc":"2.0","method":"system.listMethods","id":1}"#;
    write!(
        first,
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    first.write_all(body).unwrap();
    let mut raw = Vec::new();
    first.read_to_end(&mut raw).unwrap();
    let (status, _, reply) = parse_http(&raw);
    assert_eq!(status, 200);
    let methods = json(&reply)["result"].clone();
    assert!(
        methods.as_array().is_some_and(|m| !m.is_empty()),
        "{methods}"
    );
    assert!(!methods.to_string().contains("VM.create"), "{methods}");
    drop(srv);
}
