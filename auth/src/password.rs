//! Password hashes: argon2id, verified off the async workers.

/// An argon2id hash of `password` in PHC form (`$argon2id$v=19$...`), with a fresh
/// salt: what `rpcmux passwd` prints for a credentials file.
pub fn hash_password(password: &str) -> String {
    let _ = password;
    todo!()
}
