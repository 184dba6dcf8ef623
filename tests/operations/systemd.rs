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
