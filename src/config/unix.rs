//! Unix-domain socket listeners: where (`--listen unix:/path`, `unix:@name`) and how
//! the socket file is made (`[unix]`: its mode, owner and group).

use serde::{Deserialize, Deserializer};
use std::path::PathBuf;

/// A Unix-domain socket to listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnixAddr {
    /// A socket file (`unix:/run/rpcmux.sock`). A stale one left by a crashed run is
    /// replaced (never a file that is not a socket, nor one a live server answers
    /// on); the server removes its own at a clean exit.
    Path(PathBuf),
    /// A name in Linux's abstract namespace (`unix:@rpcmux`): no file, so no mode;
    /// gone with the process.
    Abstract(String),
}

impl UnixAddr {
    /// `rest` of a `unix:REST` listen address: `@name` or a path. An empty one, or a
    /// path too long for a socket address (108 bytes on Linux), is an error.
    pub(crate) fn parse(rest: &str) -> Result<UnixAddr, String> {
        let addr = match rest.strip_prefix('@') {
            Some("") => return Err("unix:@ needs a name".into()),
            Some(name) => UnixAddr::Abstract(name.to_owned()),
            None if rest.is_empty() => return Err("unix: needs a path".into()),
            None => UnixAddr::Path(PathBuf::from(rest)),
        };
        if addr.sockaddr_bytes().len() >= SUN_PATH_MAX {
            return Err(format!(
                "unix:{rest}: longer than a socket address holds ({} bytes)",
                SUN_PATH_MAX - 1
            ));
        }
        Ok(addr)
    }

    /// The bytes of `sun_path`: the path, or a NUL then the name for an abstract one.
    pub(crate) fn sockaddr_bytes(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        match self {
            UnixAddr::Path(p) => p.as_os_str().as_bytes().to_vec(),
            UnixAddr::Abstract(name) => [&[0u8][..], name.as_bytes()].concat(),
        }
    }
}

/// `sun_path`'s size on Linux (and most others): a path must fit with its NUL.
const SUN_PATH_MAX: usize = 108;

impl std::fmt::Display for UnixAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnixAddr::Path(p) => write!(f, "unix:{}", p.display()),
            UnixAddr::Abstract(name) => write!(f, "unix:@{name}"),
        }
    }
}

/// How socket files are made (`[unix]`, `--unix-mode`, `--unix-owner`,
/// `--unix-group`). Set before the socket listens, so no client connects while it is
/// still open to anyone the default mode admits.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct UnixConfig {
    /// The file's permission bits, e.g. `0o660` (in TOML `0o660` or `"0660"`): who may
    /// connect is who may write the file. Unset: what the umask leaves.
    #[serde(deserialize_with = "mode")]
    pub mode: Option<u32>,
    /// The file's owner, a user name or uid (changing it needs privilege).
    pub owner: Option<String>,
    /// The file's group, a group name or gid (a group the server's user is in, unless
    /// privileged).
    pub group: Option<String>,
    /// Accept a PROXY v1/v2 header first from the processes on Unix sockets: a local
    /// balancer (HAProxy `server s1 /run/rpcmux.sock send-proxy-v2`) then names each
    /// client, as one in `proxy_from` does over TCP. Off: a PROXY header there is refused.
    pub proxy: bool,
}

/// A mode written as octal text (`"0660"`, `"660"`) into its bits; `None` if it is not
/// one or has bits beyond `0o7777`.
pub fn parse_mode(text: &str) -> Option<u32> {
    let digits = text.trim().trim_start_matches("0o");
    u32::from_str_radix(digits, 8).ok().filter(|m| *m <= 0o7777)
}

fn mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Mode {
        Bits(u32),
        Octal(String),
    }
    let bad = || {
        serde::de::Error::custom("unix.mode: expected permission bits such as 0o660 or \"0660\"")
    };
    match Option::<Mode>::deserialize(d)? {
        None => Ok(None),
        Some(Mode::Bits(m)) => integer_mode(m).map(Some).map_err(serde::de::Error::custom),
        Some(Mode::Octal(text)) => parse_mode(&text).map(Some).ok_or_else(bad),
    }
}

/// An integer `mode` from TOML, where `660` is the decimal number 660 (octal 1224: the
/// sticky bit and `-w--w-r--`), not `0o660`. Permission bits of a socket file go up
/// to 0o777; anything above (setuid, setgid, sticky, or bigger) is refused, naming
/// the octal spelling that was probably meant.
fn integer_mode(m: u32) -> Result<u32, String> {
    if m <= 0o777 {
        return Ok(m);
    }
    let digits = m.to_string();
    let meant = if digits.len() <= 4 && digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        format!(": for octal {digits} write mode = 0o{digits} or mode = \"{digits}\"")
    } else {
        ": write the bits in octal, as mode = 0o660 or mode = \"0660\"".to_owned()
    };
    Err(format!(
        "unix.mode = {m} is not permission bits: TOML reads it as a decimal number, octal \
         {m:#o}, above 0o777 (setuid, setgid and sticky bits mean nothing on a socket \
         file){meant}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_names_and_their_errors() {
        assert_eq!(
            UnixAddr::parse("/run/x.sock").unwrap(),
            UnixAddr::Path("/run/x.sock".into())
        );
        assert_eq!(
            UnixAddr::parse("@rpcmux").unwrap(),
            UnixAddr::Abstract("rpcmux".into())
        );
        assert_eq!(
            UnixAddr::parse("@rpcmux").unwrap().to_string(),
            "unix:@rpcmux"
        );
        assert!(UnixAddr::parse("").is_err());
        assert!(UnixAddr::parse("@").is_err());
        let long = format!("/{}", "x".repeat(120));
        assert!(UnixAddr::parse(&long).unwrap_err().contains("longer"));
    }

    #[test]
    fn an_integer_mode_must_be_plain_permission_bits() {
        assert_eq!(integer_mode(0o660), Ok(0o660));
        assert_eq!(integer_mode(416), Ok(0o640), "the decimal 416 is 0o640");
        let e = integer_mode(660).unwrap_err();
        assert!(e.contains("octal 0o1224"), "{e}");
        assert!(e.ends_with("mode = 0o660 or mode = \"660\""), "{e}");
        let e = integer_mode(0o2770).unwrap_err();
        assert!(e.contains("setgid"), "{e}");
        assert!(e.ends_with("mode = 0o660 or mode = \"0660\""), "{e}");
    }

    #[test]
    fn modes_are_octal() {
        assert_eq!(parse_mode("0660"), Some(0o660));
        assert_eq!(parse_mode("600"), Some(0o600));
        assert_eq!(parse_mode("0o2770"), Some(0o2770));
        assert_eq!(parse_mode("0968"), None);
        assert_eq!(parse_mode("17777"), None);
    }
}
