//! Reading credentials files: what loads, and what is refused with a useful message.

use crate::{scratch_dir, SECRET_HASH};
use rpcmux_auth::{Auth, Credentials, Decision, Policy, Principal, Via};
use std::path::Path;

const HEX: &str = "0x00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn parse(text: &str) -> Result<Policy, String> {
    Policy::from_toml(text, Path::new("/nonexistent")).map_err(|e| e.to_string())
}

#[test]
fn a_good_file() {
    let dir = scratch_dir();
    std::fs::write(dir.join("jwt.hex"), format!("{HEX}\n")).unwrap();
    let path = dir.join("credentials.toml");
    std::fs::write(
        &path,
        format!(
            r#"
            anonymous = ["ping", "system.listMethods"]
            [users.alice]
            password = "{SECRET_HASH}"
            groups = ["operators"]
            allow = ["echo"]
            deny = []
            events = []
            [groups.operators]
            allow = ["VM.*", "Host.*"]
            deny = ["VM.destroy"]
            events = ["|virt|*"]
            [users.engine]
            allow = ["*"]
            [jwt]
            hs256_secret_file = "jwt.hex"
            audience = "rpcmux"
            issuer = "me"
            leeway = 5
            "#
        ),
    )
    .unwrap();
    let policy = Policy::load(&path).unwrap();
    assert!(policy.has_user("alice"));
    assert!(policy.has_user("engine"));
    assert!(!policy.has_user("operators"));
    let auth = Auth::from_file(&path).unwrap();
    assert!(auth.accepts_tokens());
    let alice = Principal::new("alice", Via::Password);
    assert_eq!(auth.allows(Some(&alice), "VM.start"), Decision::Allowed);
    assert_eq!(auth.allows(Some(&alice), "VM.destroy"), Decision::Forbidden);
    assert_eq!(auth.allows(Some(&alice), "echo"), Decision::Allowed);
    assert!(auth.sees(Some(&alice), "|virt|VM_status"));
    assert!(!auth.sees(Some(&alice), "|net|up"));
}

#[test]
fn an_empty_file_allows_nothing() {
    let auth = Auth::new(parse("").unwrap());
    assert_eq!(auth.allows(None, "ping"), Decision::NotAuthenticated);
    assert!(!auth.accepts_tokens());
    assert_eq!(
        auth.reload().map_err(|e| e.to_string()),
        Ok(Vec::new()),
        "nothing to reload"
    );
}

#[test]
fn unknown_keys_are_refused() {
    let e = parse("anonymus = [\"ping\"]").unwrap_err();
    assert!(e.contains("unknown field `anonymus`"), "{e}");
    assert!(e.contains("line 1"), "{e}");
    let e = parse("[users.bob]\nallow = []\npasword = \"x\"")
        .err()
        .unwrap();
    assert!(
        e.contains("unknown field `pasword`") && e.contains("line 3"),
        "{e}"
    );
    let e = parse("[groups.g]\nalow = []").unwrap_err();
    assert!(e.contains("unknown field `alow`"), "{e}");
    let e = parse("[jwt]\nhs256_secret_file = \"x\"\naud = \"a\"")
        .err()
        .unwrap();
    assert!(e.contains("unknown field `aud`"), "{e}");
}

#[test]
fn a_missing_group_is_refused() {
    let e = parse("[users.bob]\ngroups = [\"operators\"]")
        .err()
        .unwrap();
    assert!(
        e.contains("users.bob.groups") && e.contains("\"operators\""),
        "{e}"
    );
    assert!(e.starts_with("credentials: "), "{e}");
}

#[test]
fn a_bad_hash_is_refused() {
    let e = parse("[users.bob]\npassword = \"hunter2\"").unwrap_err();
    assert!(e.contains("users.bob.password"), "{e}");
    let e = parse(&format!(
        "[users.bob]\npassword = \"{}\"",
        SECRET_HASH.replace("argon2id", "argon2i")
    ))
    .err()
    .unwrap();
    assert!(e.contains("not an argon2id hash"), "{e}");
}

#[test]
fn bad_hs256_secrets_are_refused() {
    let dir = scratch_dir();
    let cases = [
        ("odd.hex", "abc"),
        (
            "nothex.hex",
            "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
        ),
        ("short.hex", "00112233445566778899aabbccddeeff"),
    ];
    for (name, content) in cases {
        std::fs::write(dir.join(name), content).unwrap();
        let text = format!("[jwt]\nhs256_secret_file = \"{name}\"");
        let e = Policy::from_toml(&text, &dir).unwrap_err().to_string();
        assert!(
            e.contains("jwt.hs256_secret_file") && e.contains(name),
            "{e}"
        );
    }
    let e = parse("[jwt]\nhs256_secret_file = \"missing.hex\"")
        .err()
        .unwrap();
    assert!(e.contains("missing.hex"), "{e}");
    // A relative path is read from the file's directory.
    std::fs::write(dir.join("good.hex"), HEX).unwrap();
    let text = "[jwt]\nhs256_secret_file = \"good.hex\"";
    assert!(Policy::from_toml(text, &dir).is_ok());
    assert!(parse(text).is_err(), "not from elsewhere");
}

#[test]
fn leeway_is_bounded() {
    let dir = scratch_dir();
    std::fs::write(dir.join("jwt.hex"), HEX).unwrap();
    let text = |leeway: u64| format!("[jwt]\nhs256_secret_file = \"jwt.hex\"\nleeway = {leeway}");
    assert!(Policy::from_toml(&text(3600), &dir).is_ok());
    let e = Policy::from_toml(&text(3601), &dir)
        .unwrap_err()
        .to_string();
    assert!(e.contains("jwt.leeway"), "{e}");
}

#[test]
fn exactly_one_jwt_key() {
    let dir = scratch_dir();
    std::fs::write(dir.join("jwt.hex"), HEX).unwrap();
    let both = "[jwt]\nhs256_secret_file = \"jwt.hex\"\npublic_key_file = \"jwt.hex\"";
    let e = Policy::from_toml(both, &dir).unwrap_err().to_string();
    assert!(e.contains("both"), "{e}");
    let e = Policy::from_toml("[jwt]\naudience = \"a\"", &dir)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("neither"), "{e}");
}

#[test]
fn a_public_key_file_that_is_no_public_key() {
    let dir = scratch_dir();
    std::fs::write(dir.join("key.pem"), HEX).unwrap();
    let e = Policy::from_toml("[jwt]\npublic_key_file = \"key.pem\"", &dir)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("jwt.public_key_file") && e.contains("key.pem"),
        "{e}"
    );
    let private =
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIBE=\n-----END PRIVATE KEY-----\n";
    std::fs::write(dir.join("private.pem"), private).unwrap();
    let e = Policy::from_toml("[jwt]\npublic_key_file = \"private.pem\"", &dir)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a PEM public key"), "{e}");
}

#[test]
fn not_toml() {
    let e = parse("[users.bob\n").unwrap_err();
    assert!(e.contains("line 1"), "{e}");
    let e = parse("anonymous = \"ping\"").unwrap_err();
    assert!(e.contains("invalid type"), "{e}");
}

#[tokio::test]
async fn reload_swaps_the_policy_and_keeps_it_on_error() {
    let dir = scratch_dir();
    let path = dir.join("credentials.toml");
    let write = |text: String| std::fs::write(&path, text).unwrap();
    write(format!(
        "[users.alice]\npassword = \"{SECRET_HASH}\"\nallow = [\"a\"]"
    ));
    let auth = Auth::from_file(&path).unwrap();
    let source = "192.0.2.7".parse().unwrap();
    let login = Credentials::Password {
        user: "alice".into(),
        password: "secret".into(),
    };
    let alice = auth.login(&login, source).await.unwrap();
    assert_eq!(auth.allows(Some(&alice), "a"), Decision::Allowed);
    assert_eq!(auth.allows(Some(&alice), "b"), Decision::Forbidden);

    write("[users.alice]\nallow = [\"b\"]".into());
    auth.reload().unwrap();
    assert_eq!(auth.allows(Some(&alice), "a"), Decision::Forbidden);
    assert_eq!(auth.allows(Some(&alice), "b"), Decision::Allowed);
    // The remembered success went with the old file: alice has no password now.
    assert!(auth.login(&login, source).await.is_err());

    write("[users.alice]\nallow = [\"c\"]\nbogus = 1".into());
    assert!(auth.reload().is_err());
    assert_eq!(
        auth.allows(Some(&alice), "b"),
        Decision::Allowed,
        "old policy stays"
    );
    assert!(auth.policy().has_user("alice"));
}

/// Issue 39 (smaller): a verb glob that matches no verb served is named with its
/// place, at start ([`Auth::unmatched_verb_globs`]) and by every reload.
#[test]
fn globs_matching_no_verb_are_named_with_their_place() {
    let dir = crate::scratch_dir();
    let path = dir.join("creds.toml");
    std::fs::write(
        &path,
        "anonymous = [\"ping\"]\n[users.alice]\nallow = [\"Vm.*\", \"echo\"]\ngroups = [\"ops\"]\n\
         [groups.ops]\ndeny = [\"VM.destory\"]\n",
    )
    .unwrap();
    let auth = Auth::from_file(&path).unwrap();
    assert!(auth.unmatched_verb_globs().is_empty(), "no verbs known yet");
    auth.know_verbs(|| {
        ["ping", "echo", "VM.create", "VM.destroy"]
            .map(String::from)
            .to_vec()
    });
    assert_eq!(
        auth.unmatched_verb_globs(),
        [
            "users.alice.allow[0] \"Vm.*\" matches no verb",
            "groups.ops.deny[0] \"VM.destory\" matches no verb",
        ]
    );
    std::fs::write(&path, "anonymous = [\"pong\", \"ping\"]\n").unwrap();
    assert_eq!(
        auth.reload().unwrap(),
        ["anonymous[0] \"pong\" matches no verb"]
    );
}
