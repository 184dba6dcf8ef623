//! Password hashes: argon2id PHC strings, checked at load time and verified (on the
//! blocking pool, see `pool.rs`) at login.

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Argon2, Params};

/// An argon2id hash of `password` in PHC form (`$argon2id$v=19$...`), with a fresh
/// salt: what `rpcmux passwd` prints for a credentials file. The argon2 crate's default
/// parameters, OWASP's: m=19456 KiB, t=2, p=1.
///
/// # Panics
/// If the operating system has no randomness to give for the salt.
pub fn hash_password(password: &str) -> String {
    Argon2::default()
        .hash_password(password.as_bytes())
        .expect("argon2id with default parameters and an OS-random salt")
        .to_string()
}

/// Whether `phc` is an argon2id hash this crate can verify. The reason names no part
/// of the hash.
pub(crate) fn check_phc(phc: &str) -> Result<(), &'static str> {
    let hash = PasswordHash::new(phc).map_err(|_| "not a PHC string (run `rpcmux passwd`)")?;
    if hash.algorithm.as_str() != "argon2id" {
        return Err("not an argon2id hash");
    }
    if hash.salt.is_none() || hash.hash.is_none() {
        return Err("an argon2id hash without its salt or output");
    }
    Params::try_from(&hash).map_err(|_| "invalid argon2id parameters")?;
    Ok(())
}

/// Whether `password` is the one `phc` (checked by [`check_phc`]) was made from.
pub(crate) fn verify(phc: &str, password: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(hash) => Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok(),
        Err(_) => false,
    }
}

/// What verifying against `phc` costs, to compare hashes: its memory times its passes
/// (lanes share the memory; the output length costs next to nothing).
pub(crate) fn cost(phc: &str) -> u64 {
    PasswordHash::new(phc)
        .ok()
        .and_then(|hash| Params::try_from(&hash).ok())
        .map_or(0, |p| u64::from(p.m_cost()) * u64::from(p.t_cost()))
}

/// A hash no password matches (its output is all zeros), with the same parameters
/// and output length as `phc`: verifying an unknown user's password against it costs
/// what a real user's does, so timing does not tell whether a user exists.
pub(crate) fn dummy_for(phc: &str) -> String {
    match PasswordHash::new(phc) {
        Ok(hash) => {
            let len = hash.hash.map_or(32, |h| h.len());
            let version = hash.version.unwrap_or(19);
            dummy(&format!("v={version}"), hash.params.as_str(), len)
        }
        Err(_) => default_dummy(),
    }
}

/// [`dummy_for`] a file with no password hash: the default parameters.
pub(crate) fn default_dummy() -> String {
    let p = Params::DEFAULT;
    let params = format!("m={},t={},p={}", p.m_cost(), p.t_cost(), p.p_cost());
    dummy("v=19", &params, Params::DEFAULT_OUTPUT_LEN)
}

fn dummy(version: &str, params: &str, output_len: usize) -> String {
    // Base64 of zero bytes is all `A`s: 16 bytes of salt, `output_len` of output.
    let salt = "A".repeat(22);
    let output = "A".repeat((output_len * 4).div_ceil(3));
    format!("$argon2id${version}${params}${salt}${output}")
}

/// A cheap hash for tests (the default parameters take long in a debug build).
#[cfg(test)]
pub(crate) fn cheap_hash(password: &str) -> String {
    let params = Params::new(64, 1, 1, None).expect("valid parameters");
    Argon2::from(params)
        .hash_password(password.as_bytes())
        .expect("hash")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_then_verify() {
        let phc = hash_password("correct horse");
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert_eq!(check_phc(&phc), Ok(()));
        assert!(verify(&phc, "correct horse"));
        assert!(!verify(&phc, "correct horsE"));
        assert_ne!(phc, hash_password("correct horse"), "fresh salt each time");
    }

    #[test]
    fn malformed_hashes_are_refused() {
        assert!(check_phc("").is_err());
        assert!(check_phc("hunter2").is_err());
        assert!(check_phc("$argon2id$v=19$m=19456,t=2,p=1$").is_err());
        let cheap = cheap_hash("x");
        assert!(check_phc(&cheap.replace("argon2id", "argon2i")).is_err());
        assert!(check_phc(&cheap.replace("m=64", "m=1")).is_err());
        assert!(check_phc(&cheap).is_ok());
    }

    #[test]
    fn dummies_parse_and_match_nothing() {
        let cheap = cheap_hash("x");
        let dummy = dummy_for(&cheap);
        assert_eq!(check_phc(&dummy), Ok(()), "{dummy}");
        assert!(dummy.starts_with("$argon2id$v=19$m=64,t=1,p=1$"), "{dummy}");
        assert!(!verify(&dummy, "x"));
        assert!(!verify(&dummy, ""));
        assert_eq!(check_phc(&default_dummy()), Ok(()));
        assert!(default_dummy().starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
    }
}
