//! Tokens: what passes, and every way one must not.

use crate::scratch_dir;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rpcmux_auth::{Auth, Credentials, Failure, Policy, Principal, Via};
use serde_json::{json, Value};
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SECRET: [u8; 32] = *b"0123456789abcdef0123456789abcdef";
const SOURCE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 9));

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A private key to sign with (PKCS#8 PEM) and its public key (SPKI PEM).
struct Keys {
    private: String,
    public: String,
    public_der: Vec<u8>,
}

fn rsa() -> Keys {
    let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let private = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair).unwrap();
    let public = pair.public_key().as_der().unwrap();
    keys(private.as_ref(), public.as_ref())
}

fn ec(alg: &'static signature::EcdsaSigningAlgorithm) -> Keys {
    let doc = EcdsaKeyPair::generate_pkcs8(alg, &SystemRandom::new()).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(alg, doc.as_ref()).unwrap();
    let public = pair.public_key().as_der().unwrap();
    keys(doc.as_ref(), public.as_ref())
}

fn ed25519() -> Keys {
    let doc = Ed25519KeyPair::generate_pkcs8v1(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(doc.as_ref()).unwrap();
    let public = pair.public_key().as_der().unwrap();
    keys(doc.as_ref(), public.as_ref())
}

fn keys(private: &[u8], public: &[u8]) -> Keys {
    Keys {
        private: pem("PRIVATE KEY", private),
        public: pem("PUBLIC KEY", public),
        public_der: public.to_vec(),
    }
}

/// An `Auth` whose `[jwt]` is `extra` plus a key file named `file` holding `content`.
fn auth(key_line: &str, file: &str, content: &str, extra: &str) -> Auth {
    let dir = scratch_dir();
    std::fs::write(dir.join(file), content).unwrap();
    let text = format!("[jwt]\n{key_line} = \"{file}\"\n{extra}");
    Auth::new(Policy::from_toml(&text, &dir).unwrap())
}

fn hs256(extra: &str) -> Auth {
    auth("hs256_secret_file", "jwt.hex", &hex(&SECRET), extra)
}

fn public(keys: &Keys) -> Auth {
    auth("public_key_file", "key.pem", &keys.public, "")
}

fn hmac(secret: &[u8]) -> EncodingKey {
    EncodingKey::from_secret(secret).unwrap()
}

fn sign(alg: Algorithm, key: &EncodingKey, claims: &Value) -> String {
    jsonwebtoken::encode(&Header::new(alg), claims, key).unwrap()
}

fn secret_token(claims: Value) -> String {
    sign(Algorithm::HS256, &hmac(&SECRET), &claims)
}

fn claims() -> Value {
    json!({"sub": "alice", "exp": now() + 300})
}

async fn login(auth: &Auth, token: String) -> Result<Principal, Failure> {
    auth.login(&Credentials::Token(token), SOURCE).await
}

fn refused(r: Result<Principal, Failure>, why: &str) {
    match r {
        Err(Failure::Rejected { detail }) => assert_eq!(detail, why),
        other => panic!("expected Rejected({why}), got {other:?}"),
    }
}

#[tokio::test]
async fn hs256_good() {
    let auth = hs256("");
    assert!(auth.accepts_tokens());
    let exp = now() + 300;
    let p = login(&auth, secret_token(json!({"sub": "alice", "exp": exp})))
        .await
        .unwrap();
    assert_eq!(p.name(), "alice");
    assert_eq!(p.via(), Via::Token);
    // exp plus the default leeway (30 s), as the check counts it.
    assert_eq!(
        p.expires(),
        Some(UNIX_EPOCH + Duration::from_secs(exp + 30))
    );
    // iat is neither required nor checked (geth wants it within 60 s).
    let old_iat = json!({"sub": "alice", "exp": now() + 300, "iat": now() - 3600});
    assert!(login(&auth, secret_token(old_iat)).await.is_ok());
    // A token for some audience, when none is configured, is for another service
    // (RFC 7519 §4.1.3): refused, as a string or a list.
    let aud = json!({"sub": "alice", "exp": now() + 300, "aud": "billing-service"});
    refused(
        login(&auth, secret_token(aud)).await,
        "token aud, but no audience is configured",
    );
    let list = json!({"sub": "alice", "exp": now() + 300, "aud": ["billing-service"]});
    refused(
        login(&auth, secret_token(list)).await,
        "token aud, but no audience is configured",
    );
}

/// Only the kernel names local users: a token whose `sub` is `uid:0` is refused.
#[tokio::test]
async fn a_token_cannot_name_a_local_uid() {
    let auth = hs256("");
    let root = json!({"sub": "uid:0", "exp": now() + 300});
    refused(
        login(&auth, secret_token(root)).await,
        "token sub names a local uid",
    );
}

/// An expired token's principal is no principal: refused every verb, shown no event,
/// and `is_current` says so to every other reader.
#[tokio::test]
async fn an_expired_principal_is_anonymous() {
    let auth = hs256("leeway = 0");
    let soon = json!({"sub": "alice", "exp": now() + 1});
    let p = login(&auth, secret_token(soon)).await.unwrap();
    assert!(p.is_current());
    let gone = Principal::new("alice", Via::Token).expiring(SystemTime::now());
    assert!(!gone.is_current());
    assert_eq!(
        auth.allows(Some(&gone), "anything"),
        rpcmux_auth::Decision::NotAuthenticated
    );
    assert!(!auth.sees(Some(&gone), "anything"));
}

#[tokio::test]
async fn expiry_and_not_before() {
    let auth = hs256("leeway = 10");
    let expired = json!({"sub": "alice", "exp": now() - 60});
    refused(login(&auth, secret_token(expired)).await, "token expired");
    let within_leeway = json!({"sub": "alice", "exp": now() - 2});
    let p = login(&auth, secret_token(within_leeway)).await.unwrap();
    assert!(p.expires().unwrap() > SystemTime::now());
    let early = json!({"sub": "alice", "exp": now() + 300, "nbf": now() + 100});
    refused(
        login(&auth, secret_token(early)).await,
        "token not yet valid (nbf)",
    );
    let nbf_ok = json!({"sub": "alice", "exp": now() + 300, "nbf": now() + 5});
    assert!(login(&auth, secret_token(nbf_ok)).await.is_ok());
    let no_exp = json!({"sub": "alice"});
    refused(
        login(&auth, secret_token(no_exp)).await,
        "token missing a required claim",
    );
    let no_sub = json!({"exp": now() + 300});
    refused(
        login(&auth, secret_token(no_sub)).await,
        "token missing a required claim",
    );
}

#[tokio::test]
async fn audience_and_issuer() {
    let auth = hs256("audience = \"rpcmux\"\nissuer = \"me\"");
    let good = json!({"sub": "a", "exp": now() + 300, "aud": "rpcmux", "iss": "me"});
    assert!(login(&auth, secret_token(good)).await.is_ok());
    let list = json!({"sub": "a", "exp": now() + 300, "aud": ["x", "rpcmux"], "iss": "me"});
    assert!(login(&auth, secret_token(list)).await.is_ok());
    let wrong_aud = json!({"sub": "a", "exp": now() + 300, "aud": "other", "iss": "me"});
    refused(
        login(&auth, secret_token(wrong_aud)).await,
        "token audience",
    );
    let wrong_iss = json!({"sub": "a", "exp": now() + 300, "aud": "rpcmux", "iss": "you"});
    refused(login(&auth, secret_token(wrong_iss)).await, "token issuer");
    let no_aud = json!({"sub": "a", "exp": now() + 300, "iss": "me"});
    refused(
        login(&auth, secret_token(no_aud)).await,
        "token missing a required claim",
    );
    let no_iss = json!({"sub": "a", "exp": now() + 300, "aud": "rpcmux"});
    refused(
        login(&auth, secret_token(no_iss)).await,
        "token missing a required claim",
    );
}

#[tokio::test]
async fn alg_none_and_other_keys() {
    let auth = hs256("");
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let header = b64(&json!({"alg": "none", "typ": "JWT"}));
    let none = format!("{header}.{}.", b64(&claims()));
    refused(login(&auth, none).await, "malformed token");
    let other = hmac(b"another secret, 32 bytes or more!");
    refused(
        login(&auth, sign(Algorithm::HS256, &other, &claims())).await,
        "token signature",
    );
    // The same secret, another HMAC: the key fixes HS256.
    let hs512 = sign(Algorithm::HS512, &hmac(&SECRET), &claims());
    refused(login(&auth, hs512).await, "token algorithm refused");
    let garbage = "not a token".to_owned();
    refused(login(&auth, garbage).await, "malformed token");
}

#[tokio::test]
async fn rsa_keys() {
    let keys = rsa();
    let auth = public(&keys);
    let key = EncodingKey::from_rsa_pem(keys.private.as_bytes()).unwrap();
    for alg in [Algorithm::RS256, Algorithm::RS512, Algorithm::PS256] {
        let p = login(&auth, sign(alg, &key, &claims())).await;
        assert_eq!(
            p.map(|p| p.name().to_owned()),
            Ok("alice".to_owned()),
            "{alg:?}"
        );
    }
    let stranger = rsa();
    let other = EncodingKey::from_rsa_pem(stranger.private.as_bytes()).unwrap();
    refused(
        login(&auth, sign(Algorithm::RS256, &other, &claims())).await,
        "token signature",
    );
}

#[tokio::test]
async fn algorithm_confusion_is_refused() {
    let keys = rsa();
    let auth = public(&keys);
    // HS256 with the public key (as the server holds it, PEM or DER) as the secret.
    for secret in [keys.public.as_bytes(), &keys.public_der[..]] {
        let forged = sign(Algorithm::HS256, &hmac(secret), &claims());
        refused(login(&auth, forged).await, "token algorithm refused");
    }
    let ec_keys = ec(&signature::ECDSA_P256_SHA256_FIXED_SIGNING);
    let ec_key = EncodingKey::from_ec_pem(ec_keys.private.as_bytes()).unwrap();
    refused(
        login(&auth, sign(Algorithm::ES256, &ec_key, &claims())).await,
        "token algorithm refused",
    );
}

#[tokio::test]
async fn ec_keys() {
    let p256 = ec(&signature::ECDSA_P256_SHA256_FIXED_SIGNING);
    let auth = public(&p256);
    let key = EncodingKey::from_ec_pem(p256.private.as_bytes()).unwrap();
    assert!(login(&auth, sign(Algorithm::ES256, &key, &claims()))
        .await
        .is_ok());
    let other = ec(&signature::ECDSA_P256_SHA256_FIXED_SIGNING);
    let other = EncodingKey::from_ec_pem(other.private.as_bytes()).unwrap();
    refused(
        login(&auth, sign(Algorithm::ES256, &other, &claims())).await,
        "token signature",
    );
    let forged = sign(Algorithm::HS256, &hmac(&p256.public_der), &claims());
    refused(login(&auth, forged).await, "token algorithm refused");

    let p384 = ec(&signature::ECDSA_P384_SHA384_FIXED_SIGNING);
    let auth = public(&p384);
    let key = EncodingKey::from_ec_pem(p384.private.as_bytes()).unwrap();
    assert!(login(&auth, sign(Algorithm::ES384, &key, &claims()))
        .await
        .is_ok());
}

#[tokio::test]
async fn ed25519_keys() {
    let keys = ed25519();
    let auth = public(&keys);
    let key = EncodingKey::from_ed_pem(keys.private.as_bytes()).unwrap();
    assert!(login(&auth, sign(Algorithm::EdDSA, &key, &claims()))
        .await
        .is_ok());
    let other = ed25519();
    let other = EncodingKey::from_ed_pem(other.private.as_bytes()).unwrap();
    refused(
        login(&auth, sign(Algorithm::EdDSA, &other, &claims())).await,
        "token signature",
    );
}

#[tokio::test]
async fn bad_tokens_count_toward_the_throttle() {
    let auth = hs256("");
    for _ in 0..5 {
        let _ = login(&auth, "x.y.z".to_owned()).await;
    }
    let r = login(&auth, secret_token(claims())).await;
    assert!(matches!(r, Err(Failure::Throttled { .. })), "{r:?}");
}

/// `rpcmux token`'s tokens: accepted by the same `[jwt]`, audience and issuer included;
/// none from a public key or without `[jwt]`.
#[tokio::test]
async fn minted_tokens_pass_their_own_check() {
    let extra = "audience = \"engine-api\"\nissuer = \"ops\"";
    let dir = scratch_dir();
    std::fs::write(dir.join("jwt.hex"), hex(&SECRET)).unwrap();
    let text = format!("[jwt]\nhs256_secret_file = \"jwt.hex\"\n{extra}");
    let policy = Policy::from_toml(&text, &dir).unwrap();
    let token = policy
        .mint_token("alice", Duration::from_secs(300))
        .unwrap();
    let p = login(&hs256(extra), token.clone()).await.unwrap();
    assert_eq!((p.name(), p.via()), ("alice", Via::Token));
    // A server expecting another audience refuses it.
    refused(
        login(&hs256("audience = \"other\""), token).await,
        "token audience",
    );
    assert!(policy.mint_token("", Duration::from_secs(60)).is_err());
    let keys = ec(&signature::ECDSA_P256_SHA256_ASN1_SIGNING);
    std::fs::write(dir.join("key.pem"), &keys.public).unwrap();
    let public = Policy::from_toml("[jwt]\npublic_key_file = \"key.pem\"", &dir).unwrap();
    assert!(public.mint_token("alice", Duration::from_secs(60)).is_err());
    assert!(Policy::from_toml("", &dir)
        .unwrap()
        .mint_token("alice", Duration::from_secs(60))
        .is_err());
}
