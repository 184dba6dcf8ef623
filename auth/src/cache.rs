//! Recent successful logins, so a client that sends its password with every request
//! (HTTP Basic) costs one argon2 run a minute, not one a request.
//!
//! Keyed by HMAC-SHA256 of the credentials under a random per-process key: the secret
//! itself is never stored, and the digests are worthless outside this process. Only
//! successes are remembered, for at most a minute (never past a token's expiry), at most
//! [`MAX_ENTRIES`] of them; a reload forgets them all.

use crate::{Credentials, Principal};
use aws_lc_rs::hmac;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// How long a success is remembered.
const TTL: Duration = Duration::from_secs(60);
/// At most this many successes are remembered at once.
const MAX_ENTRIES: usize = 4096;

/// The keyed digest of one set of credentials.
pub(crate) type Digest = [u8; 32];

pub(crate) struct Cache {
    key: hmac::Key,
    inner: Mutex<Inner>,
}

struct Inner {
    entries: HashMap<Digest, Entry>,
    /// Bumped by every [`Cache::clear`]: a login that started under an older policy
    /// does not put its result into the new one's cache.
    generation: u64,
}

struct Entry {
    principal: Principal,
    until: Instant,
}

impl Cache {
    pub(crate) fn new() -> Self {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        Cache {
            key: hmac::Key::generate(hmac::HMAC_SHA256, &rng).expect("OS randomness"),
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                generation: 0,
            }),
        }
    }

    /// The digest of `credentials`: their kind, then each field length-prefixed (so
    /// no two different credentials feed the same bytes).
    pub(crate) fn digest(&self, credentials: &Credentials) -> Digest {
        let mut ctx = hmac::Context::with_key(&self.key);
        let mut field = |bytes: &[u8]| {
            ctx.update(&(bytes.len() as u64).to_le_bytes());
            ctx.update(bytes);
        };
        match credentials {
            Credentials::Password { user, password } => {
                field(b"password");
                field(user.as_bytes());
                field(password.as_bytes());
            }
            Credentials::Token(token) => {
                field(b"token");
                field(token.as_bytes());
            }
        }
        let mut out = [0; 32];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// The principal these credentials made lately, if still fresh.
    pub(crate) fn get(&self, digest: &Digest) -> Option<Principal> {
        let inner = self.lock();
        let entry = inner.entries.get(digest)?;
        (entry.until > Instant::now()).then(|| entry.principal.clone())
    }

    /// The generation to hand back to [`Cache::put`] (read before verifying).
    pub(crate) fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Remember a success, unless the cache was cleared since `generation`.
    pub(crate) fn put(&self, digest: Digest, generation: u64, principal: &Principal) {
        let ttl = match principal.expires() {
            Some(at) => match at.duration_since(SystemTime::now()) {
                Ok(left) => left.min(TTL),
                Err(_) => return,
            },
            None => TTL,
        };
        let now = Instant::now();
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        if inner.entries.len() >= MAX_ENTRIES && !inner.entries.contains_key(&digest) {
            inner.entries.retain(|_, e| e.until > now);
            if inner.entries.len() >= MAX_ENTRIES {
                // All fresh: drop the one closest to expiring.
                let first = inner.entries.iter().min_by_key(|(_, e)| e.until);
                if let Some(oldest) = first.map(|(d, _)| *d) {
                    inner.entries.remove(&oldest);
                }
            }
        }
        let principal = principal.clone();
        let until = now + ttl;
        inner.entries.insert(digest, Entry { principal, until });
    }

    /// Forget everything (a reload).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.entries.clear();
        inner.generation += 1;
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Via;

    fn password(user: &str, password: &str) -> Credentials {
        Credentials::Password {
            user: user.into(),
            password: password.into(),
        }
    }

    #[test]
    fn digests_tell_credentials_apart() {
        let cache = Cache::new();
        let d = |c: &Credentials| cache.digest(c);
        assert_eq!(d(&password("a", "b")), d(&password("a", "b")));
        assert_ne!(d(&password("a", "b")), d(&password("a", "c")));
        assert_ne!(d(&password("ab", "")), d(&password("a", "b")));
        assert_ne!(d(&password("a", "b")), d(&Credentials::Token("b".into())));
        assert_ne!(
            d(&password("a", "b")),
            Cache::new().digest(&password("a", "b")),
            "a key per process (per cache)"
        );
    }

    #[test]
    fn remembers_until_cleared() {
        let cache = Cache::new();
        let digest = cache.digest(&password("alice", "pw"));
        let alice = Principal::new("alice", Via::Password);
        assert_eq!(cache.get(&digest), None);
        cache.put(digest, cache.generation(), &alice);
        assert_eq!(cache.get(&digest), Some(alice.clone()));
        let stale = cache.generation();
        cache.clear();
        assert_eq!(cache.get(&digest), None);
        cache.put(digest, stale, &alice);
        assert_eq!(cache.get(&digest), None, "started before the clear");
    }

    #[test]
    fn never_past_a_tokens_expiry() {
        let cache = Cache::new();
        let digest = cache.digest(&Credentials::Token("t".into()));
        let gone = Principal::new("t", Via::Token).expiring(SystemTime::now());
        cache.put(digest, cache.generation(), &gone);
        assert_eq!(cache.get(&digest), None);
        let soon = SystemTime::now() + Duration::from_millis(50);
        let p = Principal::new("t", Via::Token).expiring(soon);
        cache.put(digest, cache.generation(), &p);
        assert_eq!(cache.get(&digest), Some(p));
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(cache.get(&digest), None);
    }

    #[test]
    fn bounded() {
        let cache = Cache::new();
        let p = Principal::new("x", Via::Password);
        for i in 0..MAX_ENTRIES + 10 {
            let digest = cache.digest(&password("x", &i.to_string()));
            cache.put(digest, cache.generation(), &p);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        let last = cache.digest(&password("x", &(MAX_ENTRIES + 9).to_string()));
        assert!(cache.get(&last).is_some(), "the newest stays");
    }
}
