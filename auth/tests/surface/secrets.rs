//! No `Debug` or `Display` of what may reach a log line shows a secret.

use crate::{scratch_dir, SECRET_HASH};
use rpcmux_auth::{Credentials, Failure, Policy};
use std::path::Path;
use std::time::Duration;

#[test]
fn credentials_and_failures() {
    let password = Credentials::Password {
        user: "alice".into(),
        password: "hunter2-secret".into(),
    };
    let debug = format!("{password:?}");
    assert!(
        debug.contains("alice") && !debug.contains("hunter2"),
        "{debug}"
    );
    let token = Credentials::Token("eyJhbGciOi.secret-payload.sig".into());
    let debug = format!("{token:?}");
    assert!(
        !debug.contains("secret") && !debug.contains("eyJ"),
        "{debug}"
    );
    for failure in [
        Failure::Rejected {
            detail: "bad password",
        },
        Failure::Throttled {
            retry_after: Duration::from_millis(300),
        },
        Failure::Busy,
        Failure::Unsupported,
    ] {
        let shown = format!("{failure} {failure:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
    let shown = Failure::Rejected {
        detail: "unknown user",
    }
    .to_string();
    assert_eq!(
        shown, "invalid credentials",
        "does not say whether the user exists"
    );
    let shown = Failure::Throttled {
        retry_after: Duration::from_millis(300),
    }
    .to_string();
    assert!(shown.contains("1 s"), "{shown}");
}

#[test]
fn policy_errors() {
    let hash_body = &SECRET_HASH[SECRET_HASH.len() - 20..];
    let texts = [
        // A malformed hash.
        format!(
            "[users.a]\npassword = \"{}\"",
            &SECRET_HASH[..SECRET_HASH.len() - 30]
        ),
        format!("[users.a]\npassword = \"x{SECRET_HASH}\""),
        // A hash where a list belongs (serde would quote it).
        format!("[users.a]\nallow = \"{SECRET_HASH}\""),
        // Broken TOML on the hash's line (the parser would quote the line).
        format!("[users.a]\npassword = \"{SECRET_HASH}"),
        format!("[users.a]\npassword = \"{SECRET_HASH}\" junk"),
        // An unknown key after a hash.
        format!("[users.a]\npassword = \"{SECRET_HASH}\"\nalow = []"),
    ];
    for text in &texts {
        let e = Policy::from_toml(text, Path::new(".")).expect_err(text);
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains(hash_body), "{shown}");
        assert!(!shown.contains("argon2id$"), "{shown}");
    }
}

#[test]
fn key_files() {
    let dir = scratch_dir();
    let secret = "s3cr3t-not-hex-but-long-enough-to-be-a-secret-0123456789";
    std::fs::write(dir.join("jwt.hex"), secret).unwrap();
    std::fs::write(dir.join("key.pem"), secret).unwrap();
    for text in [
        "[jwt]\nhs256_secret_file = \"jwt.hex\"",
        "[jwt]\npublic_key_file = \"key.pem\"",
    ] {
        let e = Policy::from_toml(text, &dir).expect_err(text);
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }
}
