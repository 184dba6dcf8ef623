//! Binding a Unix-domain socket: a stale file from a crashed run replaced (only a
//! socket nobody answers on), the mode, owner and group set before it listens, and the
//! file removed when the listener goes, if it is still ours.

use crate::config::{UnixAddr, UnixConfig};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{self, ErrorKind};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A bound socket file, removed on drop if it is still the one we made (same device,
/// inode and change time: an inode number freed by an unlink is soon given again): a
/// successor that replaced it keeps its own.
pub(crate) struct SocketFile {
    path: PathBuf,
    id: (u64, u64, i64, i64),
}

/// What tells one file from another that took its place.
fn identity(m: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (m.dev(), m.ino(), m.ctime(), m.ctime_nsec())
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path).is_ok_and(|m| identity(&m) == self.id);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Bind and listen on `addr`. Errors name the address.
pub(crate) fn bind(
    addr: &UnixAddr,
    config: &UnixConfig,
    backlog: u32,
) -> io::Result<(std::os::unix::net::UnixListener, Option<SocketFile>)> {
    bind_named(addr, config, backlog).map_err(|e| io::Error::new(e.kind(), format!("{addr}: {e}")))
}

fn bind_named(
    addr: &UnixAddr,
    config: &UnixConfig,
    backlog: u32,
) -> io::Result<(std::os::unix::net::UnixListener, Option<SocketFile>)> {
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.set_cloexec(true)?;
    let path = match addr {
        UnixAddr::Path(p) => Some(p.as_path()),
        UnixAddr::Abstract(_) => None,
    };
    if let Some(path) = path {
        clear_stale(path)?;
    }
    let bytes = addr.sockaddr_bytes();
    // An abstract name may hold any byte, a NUL first.
    socket.bind(&SockAddr::unix(std::ffi::OsStr::from_bytes(&bytes))?)?;
    let file = match path {
        Some(path) => {
            // Removed again if what follows fails.
            let mut file = SocketFile {
                path: path.to_owned(),
                id: identity(&std::fs::symlink_metadata(path)?),
            };
            // Until `listen` a connect is refused, so nobody gets in under the mode the
            // umask gave the file before ours is set.
            apply(path, config)?;
            // chmod and chown change the file's ctime.
            file.id = identity(&std::fs::symlink_metadata(path)?);
            Some(file)
        }
        None => None,
    };
    socket.listen(backlog.min(i32::MAX as u32) as i32)?;
    socket.set_nonblocking(true)?;
    Ok((socket.into(), file))
}

/// Remove `path` if it is a socket file no server answers on (left by a crashed run).
/// A live socket is "address in use"; anything that is not a socket is never touched.
fn clear_stale(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            ErrorKind::AlreadyExists,
            "exists and is not a socket; not replacing it",
        ));
    }
    // Non-blocking: a live server with a full backlog answers EAGAIN rather than
    // holding the start up.
    let probe = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    probe.set_nonblocking(true)?;
    match probe.connect(&SockAddr::unix(path)?) {
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
            tracing::info!(path = %path.display(), "replacing a stale socket file");
            std::fs::remove_file(path)
        }
        Ok(()) => Err(in_use()),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Err(in_use()),
        Err(e) => Err(e),
    }
}

fn in_use() -> io::Error {
    io::Error::new(ErrorKind::AddrInUse, "a server is listening on this socket")
}

/// The configured owner, group and mode on the socket file at `path`.
fn apply(path: &Path, config: &UnixConfig) -> io::Result<()> {
    let owner = config.owner.as_deref().map(user_id).transpose()?;
    let group = config.group.as_deref().map(group_id).transpose()?;
    if owner.is_some() || group.is_some() {
        std::os::unix::fs::chown(path, owner, group)?;
    }
    if let Some(mode) = config.mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// A user name or numeric uid.
fn user_id(name: &str) -> io::Result<u32> {
    if let Ok(uid) = name.parse() {
        return Ok(uid);
    }
    lookup(name, "user", |name, buf| {
        // SAFETY: every pointer is valid for the call: a NUL-terminated name, a zeroed
        // passwd, a buffer of `buf.len()` bytes and the out-pointer.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut out = std::ptr::null_mut();
        let rc = unsafe { libc::getpwnam_r(name, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out) };
        (rc, (!out.is_null()).then_some(pwd.pw_uid))
    })
}

/// A group name or numeric gid.
fn group_id(name: &str) -> io::Result<u32> {
    if let Ok(gid) = name.parse() {
        return Ok(gid);
    }
    lookup(name, "group", |name, buf| {
        // SAFETY: as in `user_id`, for getgrnam_r.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut out = std::ptr::null_mut();
        let rc = unsafe { libc::getgrnam_r(name, &mut grp, buf.as_mut_ptr(), buf.len(), &mut out) };
        (rc, (!out.is_null()).then_some(grp.gr_gid))
    })
}

/// Run a reentrant `get*nam_r` with a buffer that grows on ERANGE (to 1 MiB at most).
fn lookup(
    name: &str,
    what: &str,
    call: impl Fn(*const libc::c_char, &mut [libc::c_char]) -> (libc::c_int, Option<u32>),
) -> io::Result<u32> {
    let c_name = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(ErrorKind::InvalidInput, format!("{what} name holds a NUL")))?;
    let mut size = 1024;
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        match call(c_name.as_ptr(), &mut buf) {
            (0, Some(id)) => return Ok(id),
            (0, None) => {
                return Err(io::Error::new(
                    ErrorKind::NotFound,
                    format!("no such {what}: {name}"),
                ))
            }
            (libc::ERANGE, _) if size < 1 << 20 => size *= 2,
            (rc, _) => return Err(io::Error::from_raw_os_error(rc)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("rpcmux-sock-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn stale_sockets_are_replaced_live_ones_and_other_files_never() {
        let d = dir();
        let path = d.join("s.sock");
        let addr = UnixAddr::Path(path.clone());
        let cfg = UnixConfig {
            mode: Some(0o600),
            ..Default::default()
        };
        let (live, file) = bind(&addr, &cfg, 8).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = bind(&addr, &cfg, 8).err().expect("a live server's socket");
        assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
        assert!(e.to_string().contains("s.sock"), "{e}");
        // Closed without removal (a crash): the file stays and is replaced.
        drop(live);
        std::mem::forget(file);
        let (_again, file) = bind(&addr, &cfg, 8).unwrap();
        drop(file);
        assert!(!path.exists(), "removed with its listener");
        std::fs::write(&path, b"data").unwrap();
        let e = bind(&addr, &cfg, 8).err().expect("a regular file");
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"data");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_replaced_file_is_left_to_its_new_owner() {
        let d = dir();
        let path = d.join("s.sock");
        let addr = UnixAddr::Path(path.clone());
        let (first, file) = bind(&addr, &UnixConfig::default(), 8).unwrap();
        drop(first);
        std::fs::remove_file(&path).unwrap();
        // File times tick with the kernel's coarse clock (a few ms).
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (_second, file2) = bind(&addr, &UnixConfig::default(), 8).unwrap();
        drop(file);
        assert!(
            path.exists(),
            "the first listener's drop must not remove the second's file"
        );
        drop(file2);
        assert!(!path.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn owners_by_name_or_number() {
        assert_eq!(user_id("root").unwrap(), 0);
        assert_eq!(user_id("1234").unwrap(), 1234);
        assert_eq!(group_id("root").unwrap(), 0);
        let e = user_id("no-such-user-xyz").unwrap_err();
        assert!(e.to_string().contains("no-such-user-xyz"), "{e}");
    }
}
