//! The credentials a STOMP CONNECT carries (`--auth`): `login` and `passcode`, as
//! RabbitMQ and ActiveMQ take them; a passcode that is a JWT stands for itself.

use rpcmux_auth::Credentials;
use rpcmux_stomp::Frame;

/// CONNECT's credentials; `None` when it carries none.
pub(super) fn credentials(f: &Frame) -> Option<Credentials> {
    let login = f.get("login");
    let passcode = f.get("passcode");
    match (login, passcode) {
        (_, Some(p)) if looks_like_jwt(p) => Some(Credentials::Token(p.to_owned())),
        (Some(user), Some(password)) => Some(Credentials::Password {
            user: user.to_owned(),
            password: password.to_owned(),
        }),
        // A login with no passcode is a password that is empty, which no argon2 hash in
        // a credentials file matches unless it was made so.
        (Some(user), None) => Some(Credentials::Password {
            user: user.to_owned(),
            password: String::new(),
        }),
        // A passcode with no login verifies as nobody's: refused, not anonymous.
        (None, Some(password)) => Some(Credentials::Password {
            user: String::new(),
            password: password.to_owned(),
        }),
        (None, None) => None,
    }
}

/// A compact JWS: three base64url parts, the header's starting `{"` (`eyJ`).
fn looks_like_jwt(s: &str) -> bool {
    s.starts_with("eyJ")
        && s.split('.').count() == 3
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_told_from_passwords() {
        assert!(looks_like_jwt("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig-_"));
        assert!(!looks_like_jwt("eyJ.not a token.x"));
        assert!(!looks_like_jwt("hunter2"));
        assert!(!looks_like_jwt("eyJa.b"));
    }
}
