//! The credentials flags shared by `rpcmux call` and `rpcmux bench`, for a server with
//! `--auth`. A secret never comes from the command line, where every user of the
//! machine sees it (`ps`): a password from `--password-file` or `RPCMUX_PASSWORD`, a
//! token from `--token-file` or `RPCMUX_TOKEN`.

use clap::Args;
use rpcmux::client::Credentials;
use std::path::{Path, PathBuf};

/// Where the password comes from without `--password-file`.
const PASSWORD_ENV: &str = "RPCMUX_PASSWORD";
/// Where the token comes from without `--token-file` (and without `--user`).
const TOKEN_ENV: &str = "RPCMUX_TOKEN";

#[derive(Args, Debug)]
pub struct CredentialArgs {
    /// Log in as NAME (HTTP Basic, STOMP login, rpc.login); the password is read from
    /// --password-file or the environment variable RPCMUX_PASSWORD.
    #[arg(long, value_name = "NAME", conflicts_with = "token_file")]
    user: Option<String>,
    /// File holding the password of --user (its first line).
    #[arg(long, value_name = "FILE", requires = "user")]
    password_file: Option<PathBuf>,
    /// File holding a token (a JWT) to present instead of a user (HTTP Bearer, STOMP
    /// passcode, rpc.login); without it, the environment variable RPCMUX_TOKEN.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

impl CredentialArgs {
    /// The credentials the flags and environment give; `None` for none.
    pub fn credentials(&self) -> Result<Option<Credentials>, String> {
        self.from(|name| std::env::var(name).ok())
    }

    /// [`CredentialArgs::credentials`] with the environment as `env` reads it.
    fn from(&self, env: impl Fn(&str) -> Option<String>) -> Result<Option<Credentials>, String> {
        let bad = |e: rpcmux::client::ClientError| e.to_string();
        if let Some(user) = &self.user {
            let password = match &self.password_file {
                Some(path) => first_line(path, "--password-file")?,
                None => env(PASSWORD_ENV).ok_or_else(|| {
                    format!("--user needs a password: --password-file FILE, or {PASSWORD_ENV} in the environment")
                })?,
            };
            return Credentials::password(user, &password)
                .map(Some)
                .map_err(bad);
        }
        let token = match &self.token_file {
            Some(path) => first_line(path, "--token-file")?,
            None => match env(TOKEN_ENV) {
                Some(t) => t,
                None => return Ok(None),
            },
        };
        Credentials::token(token.trim()).map(Some).map_err(bad)
    }
}

/// The first line of `path`, without its line ending (an editor's or `echo`'s newline is
/// not part of the secret). The error names the file, never its content.
fn first_line(path: &Path, flag: &str) -> Result<String, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        return Err(format!("{flag} {}: the file is empty", path.display()));
    }
    Ok(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(
        user: Option<&str>,
        password_file: Option<&Path>,
        token_file: Option<&Path>,
    ) -> CredentialArgs {
        CredentialArgs {
            user: user.map(Into::into),
            password_file: password_file.map(Into::into),
            token_file: token_file.map(Into::into),
        }
    }

    #[test]
    fn files_then_environment_and_no_secret_in_errors() {
        let dir = std::env::temp_dir().join(format!("rpcmux-cred-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pw = dir.join("pw");
        std::fs::write(&pw, "s3cret\r\n").unwrap();
        let none = |_: &str| None;
        let c = args(Some("alice"), Some(&pw), None)
            .from(none)
            .unwrap()
            .unwrap();
        assert_eq!(c.user(), Some("alice"));
        assert!(!format!("{c:?}").contains("s3cret"));
        // The environment fills in what no file gives.
        let env = |n: &str| (n == PASSWORD_ENV).then(|| "fromenv".to_string());
        assert!(args(Some("alice"), None, None).from(env).unwrap().is_some());
        let e = args(Some("alice"), None, None).from(none).unwrap_err();
        assert!(e.contains("--password-file"), "{e}");
        let tok = |n: &str| (n == TOKEN_ENV).then(|| "eyJ.a.b\n".to_string());
        let c = args(None, None, None).from(tok).unwrap().unwrap();
        assert_eq!(c.user(), None);
        assert!(args(None, None, None).from(none).unwrap().is_none());
        // A token file holding something a header cannot carry: refused, not quoted.
        let bad = dir.join("bad");
        std::fs::write(&bad, "s3cret token\n").unwrap();
        let e = args(None, None, Some(&bad)).from(none).unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        let empty = dir.join("empty");
        std::fs::write(&empty, "").unwrap();
        assert!(args(None, None, Some(&empty)).from(none).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
