//! Who the client says it is to a server with `--auth`: a user and password, or a token
//! (a JWT). Each protocol carries them its own way (see [`ConnectOpts::credentials`]);
//! this type only holds them, checks that every protocol can carry them, and writes
//! them in each form. Its `Debug` shows the user name, never the secret, and no error
//! the client makes quotes one.
//!
//! [`ConnectOpts::credentials`]: crate::ConnectOpts::credentials

use crate::ClientError;
use base64::Engine;
use rpcmux_value::{Map, Params, Value};
use std::fmt;
use std::sync::Arc;

/// A user and password, or a token. Cheap to clone (the secret is shared, not copied).
#[derive(Clone)]
pub struct Credentials(Kind);

#[derive(Clone)]
enum Kind {
    Password { user: Arc<str>, password: Arc<str> },
    Token(Arc<str>),
}

impl Credentials {
    /// A user name and its password. Refused (`Unsupported`) when some protocol could not
    /// carry them: a user name with `:` (HTTP Basic splits there) or either with a
    /// control character (a STOMP header line ends at a newline).
    pub fn password(user: &str, password: &str) -> Result<Credentials, ClientError> {
        if user.is_empty() || user.contains(':') || user.chars().any(char::is_control) {
            return Err(ClientError::Unsupported(
                "a user name must be non-empty, without ':' or control characters".into(),
            ));
        }
        if password.chars().any(char::is_control) {
            return Err(ClientError::Unsupported(
                "a password with a control character (a newline?) cannot be sent".into(),
            ));
        }
        Ok(Credentials(Kind::Password {
            user: user.into(),
            password: password.into(),
        }))
    }

    /// A bearer token (a JWT, as the server's `[jwt]` checks it). Refused
    /// (`Unsupported`) unless it is non-empty visible ASCII, as an HTTP header needs.
    pub fn token(token: &str) -> Result<Credentials, ClientError> {
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ClientError::Unsupported(
                "a token must be non-empty visible ASCII (no spaces or newlines)".into(),
            ));
        }
        Ok(Credentials(Kind::Token(token.into())))
    }

    /// The user name, if these are a password's.
    pub fn user(&self) -> Option<&str> {
        match &self.0 {
            Kind::Password { user, .. } => Some(user),
            Kind::Token(_) => None,
        }
    }

    /// The HTTP `Authorization` value: `Basic base64(user:password)` or `Bearer TOKEN`.
    pub(crate) fn authorization(&self) -> String {
        match &self.0 {
            Kind::Password { user, password } => {
                let raw = format!("{user}:{password}");
                let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
                format!("Basic {b64}")
            }
            Kind::Token(t) => format!("Bearer {t}"),
        }
    }

    /// STOMP CONNECT's `login` and `passcode`: a token is the passcode, with no login
    /// (the server tells a JWT by its shape).
    pub(crate) fn stomp_headers(&self) -> (Option<&str>, &str) {
        match &self.0 {
            Kind::Password { user, password } => (Some(user), password),
            Kind::Token(t) => (None, t),
        }
    }

    /// The params of `rpc.login`: by name (`{user, password}` or `{token}`) where the
    /// protocol has names, else by position in the verb's order `user, password, token`
    /// (`[user, password]` or `[nil, nil, token]`), which is msgpack-rpc's only form.
    pub(crate) fn login_params(&self, named: bool) -> Params {
        let (user, password, token) = match &self.0 {
            Kind::Password { user, password } => (Some(user), Some(password), None),
            Kind::Token(t) => (None, None, Some(t)),
        };
        if named {
            let mut m = Map::default();
            for (k, v) in [("user", user), ("password", password), ("token", token)] {
                if let Some(v) = v {
                    m.insert(k, Value::from(&**v));
                }
            }
            return Params::Named(m);
        }
        let text = |v: Option<&Arc<str>>| v.map_or(Value::Nil, |v| Value::from(&**v));
        let mut p = vec![text(user), text(password), text(token)];
        while p.last() == Some(&Value::Nil) {
            p.pop();
        }
        Params::Positional(p)
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Password { user, .. } => f
                .debug_struct("Password")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            Kind::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_and_no_secret_in_debug() {
        let p = Credentials::password("alice", "pa:ss").unwrap();
        assert_eq!(p.authorization(), "Basic YWxpY2U6cGE6c3M=");
        assert_eq!(p.stomp_headers(), (Some("alice"), "pa:ss"));
        assert_eq!(
            p.login_params(false),
            Params::Positional(vec!["alice".into(), "pa:ss".into()])
        );
        let Params::Named(m) = p.login_params(true) else {
            panic!()
        };
        assert_eq!(m.get("password"), Some(&Value::from("pa:ss")));
        assert!(!format!("{p:?}").contains("pa:ss"), "{p:?}");

        let t = Credentials::token("eyJ.a.b").unwrap();
        assert_eq!(t.authorization(), "Bearer eyJ.a.b");
        assert_eq!(t.stomp_headers(), (None, "eyJ.a.b"));
        assert_eq!(
            t.login_params(false),
            Params::Positional(vec![Value::Nil, Value::Nil, "eyJ.a.b".into()])
        );
        assert!(!format!("{t:?}").contains("eyJ"), "{t:?}");
    }

    #[test]
    fn what_a_protocol_cannot_carry_is_refused_without_echo() {
        for e in [
            Credentials::password("a:b", "x").unwrap_err(),
            Credentials::password("", "x").unwrap_err(),
            Credentials::password("a", "secret\n").unwrap_err(),
            Credentials::token("secret token").unwrap_err(),
            Credentials::token("").unwrap_err(),
        ] {
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
}
