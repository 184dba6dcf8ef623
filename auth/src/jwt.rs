//! `[jwt]`: the key tokens are checked with, and checking them.
//!
//! The algorithm is the key's, never the token header's choice: an HS256 secret checks
//! HS256 only; an RSA public key RS256/384/512 and PS256/384/512; an EC key ES256
//! (P-256) or ES384 (P-384); an Ed25519 key EdDSA. So `alg: none` and a token
//! HMAC-signed with the public key as its secret (algorithm confusion) are refused.
//! Unlike geth, `iat` is not required (nor checked to be within 60 s): `exp` bounds a
//! token's life here.

use crate::PolicyError;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long past `exp` (and before `nbf`) a token still passes: clock skew between
/// the issuer and this server.
pub(crate) const DEFAULT_LEEWAY: u64 = 30;

/// Clock skew past this is a misconfiguration (and the check's arithmetic wants
/// `leeway` < now).
const MAX_LEEWAY: u64 = 3600;

/// An HS256 secret shorter than this is refused (geth's minimum too).
const MIN_SECRET_LEN: usize = 32;

/// `[jwt]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JwtConfig {
    hs256_secret_file: Option<PathBuf>,
    public_key_file: Option<PathBuf>,
    audience: Option<String>,
    issuer: Option<String>,
    /// Seconds; [`DEFAULT_LEEWAY`] when absent.
    leeway: Option<u64>,
}

/// A loaded `[jwt]`: its key and what a token must satisfy.
pub(crate) struct JwtKey {
    key: DecodingKey,
    validation: Validation,
    /// The HS256 secret as a signing key, to mint tokens this server accepts
    /// (`rpcmux token`); `None` for a public key (its private half is the issuer's).
    signing: Option<EncodingKey>,
    audience: Option<String>,
    issuer: Option<String>,
}

/// The claims of a minted token.
#[derive(Serialize)]
struct Minted<'a> {
    sub: &'a str,
    iat: u64,
    exp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iss: Option<&'a str>,
}

/// The claims a principal is made of (the rest are checked by `Validation`). Optional
/// here so that a missing one is reported as missing (by `Validation`, which requires
/// both), not as a malformed token.
#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    exp: Option<f64>,
    /// Only whether it is there: with no `audience` configured, a token meant for
    /// some audience is meant for another service (RFC 7519 §4.1.3).
    #[serde(default)]
    aud: Option<serde::de::IgnoredAny>,
}

impl JwtKey {
    /// Load the key `config` names (relative to `base`); errors name the file, never
    /// its content.
    pub(crate) fn load(config: &JwtConfig, base: &Path, origin: &str) -> Result<Self, PolicyError> {
        let mut signing = None;
        let (key, mut validation) = match (&config.hs256_secret_file, &config.public_key_file) {
            (Some(file), None) => {
                let place = format!("jwt.hs256_secret_file ({})", file.display());
                let text = read(base, file, origin, &place)?;
                let secret =
                    parse_hex_secret(&text).map_err(|why| PolicyError::at(origin, &place, why))?;
                let key = DecodingKey::from_secret(&secret)
                    .map_err(|_| PolicyError::at(origin, &place, "unusable secret"))?;
                signing = EncodingKey::from_secret(&secret).ok();
                (key, Validation::new(Algorithm::HS256))
            }
            (None, Some(file)) => {
                let place = format!("jwt.public_key_file ({})", file.display());
                let pem = read(base, file, origin, &place)?;
                let label = pem
                    .trim_start()
                    .strip_prefix("-----BEGIN ")
                    .and_then(|rest| rest.split_once("-----"));
                if !label.is_some_and(|(label, _)| label.ends_with("PUBLIC KEY")) {
                    return Err(PolicyError::at(
                        origin,
                        &place,
                        "not a PEM public key (BEGIN PUBLIC KEY)",
                    ));
                }
                public_key(pem.as_bytes()).ok_or_else(|| {
                    PolicyError::at(
                        origin,
                        &place,
                        "not an RSA, EC (P-256, P-384) or Ed25519 public key in PEM",
                    )
                })?
            }
            (Some(_), Some(_)) => {
                return Err(PolicyError::at(
                    origin,
                    "[jwt]",
                    "both hs256_secret_file and public_key_file: give one",
                ))
            }
            (None, None) => {
                return Err(PolicyError::at(
                    origin,
                    "[jwt]",
                    "neither hs256_secret_file nor public_key_file",
                ))
            }
        };
        validation.leeway = match config.leeway.unwrap_or(DEFAULT_LEEWAY) {
            leeway @ 0..=MAX_LEEWAY => leeway,
            _ => return Err(PolicyError::at(origin, "jwt.leeway", "more than an hour")),
        };
        validation.validate_nbf = true;
        let mut required = vec!["exp", "sub"];
        validation.validate_aud = config.audience.is_some();
        if let Some(aud) = &config.audience {
            validation.set_audience(&[aud]);
            required.push("aud");
        }
        if let Some(iss) = &config.issuer {
            validation.set_issuer(&[iss]);
            required.push("iss");
        }
        validation.set_required_spec_claims(&required);
        Ok(JwtKey {
            key,
            validation,
            signing,
            audience: config.audience.clone(),
            issuer: config.issuer.clone(),
        })
    }

    /// An HS256 token for `sub`, valid from now for `ttl`, with the audience and issuer
    /// this key checks: what `rpcmux token` prints.
    pub(crate) fn mint(&self, sub: &str, ttl: Duration) -> Result<String, &'static str> {
        let key = self
            .signing
            .as_ref()
            .ok_or("[jwt] names a public key: tokens come from whoever holds its private key")?;
        if sub.is_empty() {
            return Err("an empty sub names nobody");
        }
        if crate::Principal::is_local_user_name(sub) {
            return Err("a uid:N sub names a local user, which only the kernel does (tokens with one are refused)");
        }
        if ttl.is_zero() {
            return Err("a token for 0 seconds never holds");
        }
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| "the clock is before 1970")?
            .as_secs();
        let claims = Minted {
            sub,
            iat,
            exp: iat.saturating_add(ttl.as_secs()),
            aud: self.audience.as_deref(),
            iss: self.issuer.as_deref(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, key)
            .map_err(|_| "cannot sign the token")
    }

    /// Check `token`: the principal's name (`sub`) and when it stops holding (`exp`
    /// plus the leeway, as the check itself counts it). The error is a log detail.
    pub(crate) fn verify(&self, token: &str) -> Result<(String, SystemTime), &'static str> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation)
            .map_err(|e| detail(e.kind()))?;
        if self.audience.is_none() && data.claims.aud.is_some() {
            return Err("token aud, but no audience is configured");
        }
        let (Some(sub), Some(exp)) = (data.claims.sub, data.claims.exp) else {
            return Err("token missing a required claim");
        };
        if sub.is_empty() {
            return Err("token with an empty sub");
        }
        let until = exp.max(0.0) + self.validation.leeway as f64;
        let expires = Duration::try_from_secs_f64(until)
            .ok()
            .and_then(|d| UNIX_EPOCH.checked_add(d))
            .ok_or("token exp out of range")?;
        Ok((sub, expires))
    }
}

/// The log detail of a refused token.
fn detail(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "token expired",
        ErrorKind::ImmatureSignature => "token not yet valid (nbf)",
        ErrorKind::InvalidAudience => "token audience",
        ErrorKind::InvalidIssuer => "token issuer",
        ErrorKind::InvalidSignature => "token signature",
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => "token algorithm refused",
        ErrorKind::MissingRequiredClaim(_) => "token missing a required claim",
        ErrorKind::InvalidClaimFormat(_) => "token claim malformed",
        _ => "malformed token",
    }
}

fn read(base: &Path, file: &Path, origin: &str, place: &str) -> Result<String, PolicyError> {
    std::fs::read_to_string(base.join(file)).map_err(|e| PolicyError::at(origin, place, e))
}

/// geth's `jwt.hex`: 32 or more bytes in hex, optionally `0x`-prefixed, whitespace
/// around it ignored.
fn parse_hex_secret(text: &str) -> Result<Vec<u8>, &'static str> {
    let hex = text.trim();
    let hex = hex
        .strip_prefix("0x")
        .or_else(|| hex.strip_prefix("0X"))
        .unwrap_or(hex);
    if !hex.len().is_multiple_of(2) {
        return Err("not hex: an odd number of digits");
    }
    let digit = |c: u8| (c as char).to_digit(16).ok_or("not hex");
    let secret = hex
        .as_bytes()
        .chunks(2)
        .map(|pair| Ok((digit(pair[0])? << 4 | digit(pair[1])?) as u8))
        .collect::<Result<Vec<u8>, &'static str>>()?;
    if secret.len() < MIN_SECRET_LEN {
        return Err("secret shorter than 32 bytes");
    }
    Ok(secret)
}

/// The key in `pem` and the algorithms it checks, whatever kind of public key it is.
fn public_key(pem: &[u8]) -> Option<(DecodingKey, Validation)> {
    if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.algorithms = vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ];
        return Some((key, validation));
    }
    if let Ok(key) = DecodingKey::from_ec_pem(pem) {
        // The key is the curve point, uncompressed: 1 + 2 × the coordinate size.
        let alg = match key.try_get_as_bytes().ok()?.len() {
            65 => Algorithm::ES256,
            97 => Algorithm::ES384,
            _ => return None,
        };
        return Some((key, Validation::new(alg)));
    }
    if let Ok(key) = DecodingKey::from_ed_pem(pem) {
        return Some((key, Validation::new(Algorithm::EdDSA)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parse_hex_secret;

    #[test]
    fn hex_secrets() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        assert_eq!(parse_hex_secret(hex).unwrap().len(), 32);
        assert_eq!(parse_hex_secret(&format!("0x{hex}\n")).unwrap().len(), 32);
        assert_eq!(parse_hex_secret(&format!("  {hex}  ")).unwrap()[31], 0xff);
        assert!(parse_hex_secret(&hex[..62]).is_err(), "31 bytes");
        assert!(parse_hex_secret(&hex[..63]).is_err(), "odd");
        assert!(parse_hex_secret(&hex.replace('a', "g")).is_err());
        assert!(parse_hex_secret(&format!("0x {hex}")).is_err());
        assert!(parse_hex_secret("").is_err());
    }
}
