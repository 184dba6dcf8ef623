//! The crate as the server sees it: credentials files, decisions, tokens, and what a
//! log line of any of its types may show.

mod decisions;
mod files;
mod jwt;
mod secrets;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty directory for one test's files.
pub fn scratch_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("rpcmux-auth-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A cheap argon2id hash of "secret" (m=64 KiB, t=1): a debug build verifies it fast.
pub const SECRET_HASH: &str =
    "$argon2id$v=19$m=64,t=1,p=1$MSk7JXmlqOkw0dB7lrlqmw$+IZgcxCAy2yR9DXYdTm8SjImNWn2LDfR+D89U9v0jMY";
