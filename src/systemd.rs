//! systemd integration (Linux): readiness and reload notification (`Type=notify`,
//! `Type=notify-reload`) and socket activation (`rpcmux.socket`). `rpcmux serve` uses
//! them by itself; embedders call [`listen_fds`] and pass the listeners to
//! [`Server::from_listeners`](crate::Server::from_listeners), and [`notify`] (and
//! [`reloading`]) when their own process is ready, reloading or stopping.
//!
//! Both protocols are written out here rather than taken from a crate: each is a few
//! lines over std and socket2 (already a dependency), and the `sd-notify` crate (0.5)
//! connects to `NOTIFY_SOCKET` as a file path only, so it cannot reach the abstract
//! sockets (`@name`) that containers and some service managers hand out. Both do
//! nothing when their variables are unset, so the same binary runs outside systemd.

use crate::server::PassedListener;
use socket2::{SockRef, Socket, Type};
use std::ffi::OsStr;
use std::io;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first file descriptor a service manager passes (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: RawFd = 3;

/// Send `state` (newline-separated `KEY=VALUE` assignments, e.g. `"READY=1"` or
/// `"STOPPING=1"`) to the service manager at `$NOTIFY_SOCKET`, a path or an abstract
/// socket (`@name`). `Ok(false)` when the variable is unset: not run by a manager that
/// listens, nothing to do.
pub fn notify(state: &str) -> io::Result<bool> {
    let Some(addr) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    send(&addr, state.as_bytes())?;
    Ok(true)
}

/// Tell the service manager a reload has begun: `RELOADING=1` with the
/// `MONOTONIC_USEC` that `Type=notify-reload` (systemd 253+) requires, so it can tell
/// this reload from an older one. Send `READY=1` through [`notify`] once it is done,
/// whatever its outcome: until then `systemctl reload` waits. `Ok(false)` when
/// `NOTIFY_SOCKET` is unset.
pub fn reloading() -> io::Result<bool> {
    notify(&format!("RELOADING=1\nMONOTONIC_USEC={}", monotonic_usec()))
}

/// CLOCK_MONOTONIC in microseconds, the clock systemd compares `MONOTONIC_USEC` with.
fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
}

/// One datagram to `addr`, as sd_notify(3) sends it.
fn send(addr: &OsStr, msg: &[u8]) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let sent = match addr.as_bytes() {
        [b'@', name @ ..] => {
            use std::os::linux::net::SocketAddrExt;
            let to = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(msg, &to)?
        }
        [b'/', ..] => sock.send_to(msg, addr)?,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "NOTIFY_SOCKET={} is neither an absolute path nor @abstract",
                    addr.to_string_lossy()
                ),
            ))
        }
    };
    if sent != msg.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "notification cut short",
        ));
    }
    Ok(())
}

/// Set once the passed sockets have been taken, so no two owners ever close them.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The listening sockets a service manager passed to this process (socket activation,
/// sd_listen_fds(3)): file descriptors 3 onwards when `LISTEN_PID` is our pid, as many as
/// `LISTEN_FDS` says. Empty when the variables are unset or meant for another process,
/// and on every call after the first (the sockets have one owner). Each must be a
/// listening stream socket: TCP (`ListenStream=` with an IP address and port) or
/// Unix-domain (`ListenStream=/run/rpcmux.sock`); anything else is an error naming the
/// descriptor. The sockets are marked close-on-exec; the
/// variables are left as they are (changing the environment of a running,
/// multi-threaded process is not sound).
pub fn listen_fds() -> io::Result<Vec<PassedListener>> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    let n = passed(pid.as_deref(), fds.as_deref(), std::process::id())?;
    if n == 0 || TAKEN.swap(true, Ordering::SeqCst) {
        return Ok(Vec::new());
    }
    (LISTEN_FDS_START..LISTEN_FDS_START + n)
        .map(adopt)
        .collect()
}

/// How many descriptors `LISTEN_PID`/`LISTEN_FDS` pass to the process `me`.
fn passed(pid: Option<&str>, fds: Option<&str>, me: u32) -> io::Result<RawFd> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(0);
    };
    let pid: u32 = pid
        .trim()
        .parse()
        .map_err(|_| bad("LISTEN_PID is not a pid"))?;
    if pid != me {
        return Ok(0);
    }
    let n: RawFd = fds
        .trim()
        .parse()
        .map_err(|_| bad("LISTEN_FDS is not a count"))?;
    if !(0..=4096).contains(&n) {
        return Err(bad("LISTEN_FDS out of range"));
    }
    Ok(n)
}

/// Take ownership of the passed descriptor `fd` once it is known to be a listening
/// TCP or Unix-domain stream socket.
fn adopt(fd: RawFd) -> io::Result<PassedListener> {
    let not = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("socket activation: fd {fd} is not a listening stream socket ({why})"),
        )
    };
    let unix = {
        // SAFETY: only borrowed for these checks, during which nothing closes it (it is
        // ours alone: the service manager passed it, and `TAKEN` admits one taker). A
        // descriptor that is not open fails the first check with EBADF.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let sock = SockRef::from(&borrowed);
        let kind = sock.r#type().map_err(|e| not(e.to_string()))?;
        if kind != Type::STREAM {
            return Err(not("not a stream socket".into()));
        }
        let local = sock.local_addr()?;
        if local.as_socket().is_none() && local.domain() != socket2::Domain::UNIX {
            return Err(not("neither an IP nor a Unix-domain socket".into()));
        }
        if !sock.is_listener()? {
            return Err(not("not listening".into()));
        }
        local.domain() == socket2::Domain::UNIX
    };
    // SAFETY: an open socket (checked above) that nothing else in the process owns.
    let socket = Socket::from(unsafe { OwnedFd::from_raw_fd(fd) });
    socket.set_cloexec(true)?;
    socket.set_nonblocking(true)?;
    Ok(match unix {
        true => PassedListener::Unix(socket.into()),
        false => PassedListener::Tcp(socket.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::linux::net::SocketAddrExt;
    use std::time::Duration;

    #[test]
    fn listen_pid_must_be_ours() {
        assert_eq!(passed(None, None, 7).unwrap(), 0);
        assert_eq!(passed(Some("7"), None, 7).unwrap(), 0);
        assert_eq!(
            passed(None, Some("2"), 7).unwrap(),
            0,
            "no LISTEN_PID: not for us"
        );
        assert_eq!(
            passed(Some("8"), Some("2"), 7).unwrap(),
            0,
            "another process's"
        );
        assert_eq!(passed(Some("7"), Some("2"), 7).unwrap(), 2);
        assert!(passed(Some("x"), Some("2"), 7).is_err());
        assert!(passed(Some("7"), Some("-1"), 7).is_err());
        assert!(passed(Some("7"), Some("two"), 7).is_err());
    }

    #[test]
    fn notifies_abstract_and_path_sockets() {
        let name = format!("rpcmux-notify-test-{}", std::process::id());
        let at = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&at).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        send(OsStr::new(&format!("@{name}")), b"READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        let path = std::env::temp_dir().join(format!("{name}.sock"));
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        send(path.as_os_str(), b"STOPPING=1").unwrap();
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
        let _ = std::fs::remove_file(&path);

        assert!(send(OsStr::new("relative/path"), b"READY=1").is_err());
    }

    #[test]
    fn only_listening_stream_sockets_are_adopted() {
        // A connected-to-nothing stream socket: TCP, but not listening. It is adopted
        // by `adopt` only on success, so on the expected error it stays ours to close.
        let sock = Socket::new(socket2::Domain::IPV4, Type::STREAM, None).unwrap();
        sock.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        let err = adopt(std::os::fd::AsRawFd::as_raw_fd(&sock)).unwrap_err();
        assert!(err.to_string().contains("not listening"), "{err}");
        let udp = Socket::new(socket2::Domain::IPV4, Type::DGRAM, None).unwrap();
        let err = adopt(std::os::fd::AsRawFd::as_raw_fd(&udp)).unwrap_err();
        assert!(err.to_string().contains("not a stream socket"), "{err}");

        let listening = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listening.local_addr().unwrap();
        let fd = std::os::fd::IntoRawFd::into_raw_fd(listening);
        let Ok(PassedListener::Tcp(adopted)) = adopt(fd) else {
            panic!("a TCP listener")
        };
        assert_eq!(adopted.local_addr().unwrap(), addr);

        let name = format!("rpcmux-adopt-{}", std::process::id());
        let at = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let unix = std::os::unix::net::UnixListener::bind_addr(&at).unwrap();
        let fd = std::os::fd::IntoRawFd::into_raw_fd(unix);
        let Ok(PassedListener::Unix(adopted)) = adopt(fd) else {
            panic!("a Unix listener")
        };
        let local = adopted.local_addr().unwrap();
        assert_eq!(local.as_abstract_name(), Some(name.as_bytes()));
    }
}
