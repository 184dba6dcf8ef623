//! The policy in force, and verifying credentials against it.

use crate::cache::Cache;
use crate::glob;
use crate::password;
use crate::pool::{Lane, Pool, Refused};
use crate::throttle::{source_key, Name, Throttle};
use crate::{Credentials, Decision, Failure, Policy, PolicyError, Principal, Via};
use arc_swap::ArcSwap;
use futures_util::future::BoxFuture;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An embedder's own user store (LDAP, a database): asked before the credentials
/// file. `Ok(Some(name))`: verified, the principal is `name` (its permissions are the
/// file's user of that name, if any, plus `anonymous`); `Ok(None)`: not one of mine,
/// try the file; `Err(())`: rejected.
pub trait Authenticate: Send + Sync + 'static {
    /// Verify `credentials` presented from `source`. May block or take long: it runs
    /// off the async workers' fast path, a bounded number at once.
    fn authenticate(
        &self,
        credentials: &Credentials,
        source: IpAddr,
    ) -> BoxFuture<'static, Result<Option<String>, ()>>;
}

/// What [`Auth::know_verbs`] was given.
type VerbNames = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// How many [`Authenticate`] calls run at once, and how many more may wait.
const AUTHENTICATOR_PARALLEL: usize = 16;
const AUTHENTICATOR_QUEUE: usize = 64;

/// The policy in force (swapped whole on [`Auth::reload`]) and the machinery that
/// verifies credentials: a bounded pool of password verifications, a keyed-digest cache
/// of recent successes, and the failed-attempt throttle.
pub struct Auth {
    policy: ArcSwap<Policy>,
    /// Where [`Auth::reload`] reads from; `None`: made from a `Policy`, nothing to reload.
    path: Option<PathBuf>,
    authenticator: Option<Arc<dyn Authenticate>>,
    pub(crate) pool: Pool,
    /// The authenticator's own slots: its calls wait on a network more than they use a
    /// core, so they get more at once than argon2 does, and never starve it.
    authenticator_pool: Pool,
    pub(crate) cache: Cache,
    pub(crate) throttle: Throttle,
    /// Bumped by every reload: see [`Auth::generation`].
    generation: AtomicU64,
    /// The names of the verbs served now, to check the file's globs against
    /// ([`Auth::know_verbs`]).
    verbs: std::sync::RwLock<Option<VerbNames>>,
    /// How many argon2 verifications ran (the tests' witness that one did not).
    #[cfg(test)]
    pub(crate) argon2_runs: Arc<std::sync::atomic::AtomicUsize>,
}

impl Auth {
    /// An `Auth` enforcing `policy`.
    pub fn new(policy: Policy) -> Self {
        Self::with_parts(policy, None, Pool::per_core(), Throttle::new())
    }

    pub(crate) fn with_parts(
        policy: Policy,
        path: Option<PathBuf>,
        pool: Pool,
        throttle: Throttle,
    ) -> Self {
        Auth {
            policy: ArcSwap::from_pointee(policy),
            path,
            authenticator: None,
            pool,
            authenticator_pool: Pool::new(AUTHENTICATOR_PARALLEL, AUTHENTICATOR_QUEUE),
            cache: Cache::new(),
            throttle,
            generation: AtomicU64::new(0),
            verbs: Default::default(),
            #[cfg(test)]
            argon2_runs: Default::default(),
        }
    }

    /// An `Auth` enforcing the credentials file at `path` (reloaded from the same path
    /// by [`Auth::reload`]).
    pub fn from_file(path: &Path) -> Result<Self, PolicyError> {
        let policy = Policy::load(path)?;
        let path = Some(path.to_path_buf());
        Ok(Self::with_parts(
            policy,
            path,
            Pool::per_core(),
            Throttle::new(),
        ))
    }

    /// Also ask `authenticator` (before the file) for every password or token.
    pub fn with_authenticator(mut self, authenticator: Arc<dyn Authenticate>) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// Read the credentials file again and put it in force; on error the old policy
    /// stays. Principals already bound keep their names; their permissions are the new
    /// file's from the next call on. Remembered credentials are forgotten, here and on
    /// every connection ([`Auth::generation`]). `Ok` holds the new file's warnings
    /// ([`Auth::unmatched_verb_globs`]), for the log.
    pub fn reload(&self) -> Result<Vec<String>, PolicyError> {
        let Some(path) = &self.path else {
            return Ok(Vec::new());
        };
        let policy = Policy::load(path)?;
        self.policy.store(Arc::new(policy));
        self.cache.clear();
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(self.unmatched_verb_globs())
    }

    /// Tell the policy which verbs are served (`names` is asked at each check: the
    /// gateway's verbs change), so that [`Auth::unmatched_verb_globs`] and
    /// [`Auth::reload`] can name the globs that match none.
    pub fn know_verbs(&self, names: impl Fn() -> Vec<String> + Send + Sync + 'static) {
        if let Ok(mut v) = self.verbs.write() {
            *v = Some(Arc::new(names));
        }
    }

    /// The policy's verb globs that match no verb served, with their places
    /// ([`Policy::unmatched_verb_globs`]); none before [`Auth::know_verbs`].
    pub fn unmatched_verb_globs(&self) -> Vec<String> {
        let names = self.verbs.read().ok().and_then(|v| v.clone());
        match names {
            Some(names) => self.policy.load().unmatched_verb_globs(&names()),
            None => Vec::new(),
        }
    }

    /// The policy in force now.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.load_full()
    }

    /// Verify `credentials` from `source`: a throttled source first, then a recent
    /// success remembered by keyed digest (a user throttled by guesses elsewhere keeps
    /// credentials that verified lately), then a throttled user (nothing verified while
    /// either is), then the embedder's authenticator, then the file (passwords on the blocking
    /// pool, at most one per core at once, a bounded queue: [`Failure::Busy`] past it).
    pub async fn login(
        &self,
        credentials: &Credentials,
        source: IpAddr,
    ) -> Result<Principal, Failure> {
        let policy = self.policy.load_full();
        // Users of the file and invented names are counted apart (invented ones cannot
        // push a real user's count out), and answered alike: a lockout does not tell
        // whether a name exists.
        let user = match credentials {
            Credentials::Password { user, .. } if policy.has_user(user) => Some(Name::Known(user)),
            Credentials::Password { user, .. } => Some(Name::Unknown(user)),
            Credentials::Token(_) => None,
        };
        // A guessing address learns nothing, not even from the cache.
        if let Err(retry_after) = self.throttle.check(source, None) {
            return Err(Failure::Throttled { retry_after });
        }
        // Credentials that verified lately are known good: a flood of wrong passwords
        // for this user elsewhere does not lock its owner out of them.
        let digest = self.cache.digest(credentials);
        if let Some(principal) = self.cache.get(&digest) {
            return Ok(principal);
        }
        if let Err(retry_after) = self.throttle.check(source, user) {
            return Err(Failure::Throttled { retry_after });
        }
        let generation = self.cache.generation();
        let outcome = self.verify(&policy, credentials, source).await;
        match &outcome {
            Ok(principal) => {
                self.throttle.succeeded(source, user);
                self.cache.put(digest, generation, principal);
            }
            Err(Failure::Rejected { .. }) => self.throttle.failed(source, user),
            // Refused unverified, but an attempt all the same: a flood that only ever
            // meets a full queue is throttled like one that is verified and wrong, so
            // it stops costing others their turn.
            Err(Failure::Busy) => self.throttle.failed(source, None),
            Err(_) => {}
        }
        outcome
    }

    /// The embedder's authenticator, then the file.
    async fn verify(
        &self,
        policy: &Policy,
        credentials: &Credentials,
        source: IpAddr,
    ) -> Result<Principal, Failure> {
        if let Some(authenticator) = &self.authenticator {
            let authenticator = authenticator.clone();
            let credentials = credentials.clone();
            let handle = tokio::runtime::Handle::current();
            // On the blocking pool as a whole: an authenticator may block before or
            // inside its future.
            let job = move || handle.block_on(authenticator.authenticate(&credentials, source));
            match self.authenticator_pool.run(job).await {
                Ok(Ok(Some(name))) if Principal::is_local_user_name(&name) => {
                    return Err(rejected("authenticator named a local uid"))
                }
                Ok(Ok(Some(name))) => return Ok(Principal::new(name, Via::Custom)),
                Ok(Ok(None)) => {}
                Ok(Err(())) => return Err(rejected("rejected by the authenticator")),
                Err(refused) => return Err(pool_failure(refused)),
            }
        }
        match credentials {
            Credentials::Password { user, password } => {
                self.verify_password(policy, user, password, source).await
            }
            Credentials::Token(token) => {
                let jwt = policy.jwt.as_ref().ok_or(Failure::Unsupported)?;
                let (sub, expires) = jwt.verify(token).map_err(rejected)?;
                if Principal::is_local_user_name(&sub) {
                    return Err(rejected("token sub names a local uid"));
                }
                Ok(Principal::new(sub, Via::Token).expiring(expires))
            }
        }
    }

    /// Argon2 on the blocking pool; an unknown user (or one without a password) costs
    /// the same, against the policy's dummy hash.
    async fn verify_password(
        &self,
        policy: &Policy,
        user: &str,
        password: &str,
        source: IpAddr,
    ) -> Result<Principal, Failure> {
        let stored = policy.users.get(user).and_then(|u| u.password.as_ref());
        let (phc, why) = match stored {
            Some(phc) => (phc.clone(), "bad password"),
            None if policy.users.contains_key(user) => {
                (policy.dummy_hash.clone(), "user has no password")
            }
            None => (policy.dummy_hash.clone(), "unknown user"),
        };
        let password = password.to_owned();
        #[cfg(test)]
        let runs = self.argon2_runs.clone();
        let job = move || {
            #[cfg(test)]
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            password::verify(&phc, &password)
        };
        let lane = match self.throttle.in_good_standing(source) {
            true => Lane::Trusted,
            false => Lane::Any,
        };
        match self.pool.run_for(source_key(source), lane, job).await {
            Ok(true) if stored.is_some() => Ok(Principal::new(user, Via::Password)),
            Ok(_) => Err(rejected(why)),
            Err(refused) => Err(pool_failure(refused)),
        }
    }

    /// The principal a verified certificate name makes (a user of the file with no
    /// password, e.g. `[users.engine]`; any other name too, with only the anonymous
    /// permissions). `None` for a `uid:N` name: only the kernel names local users
    /// ([`Auth::unix_peer`]), never a certificate or a PROXY header.
    pub fn certificate(&self, name: &str) -> Option<Principal> {
        (!Principal::is_local_user_name(name)).then(|| Principal::new(name, Via::Certificate))
    }

    /// The principal a Unix-domain socket's peer makes: `uid:1000` for the process the
    /// kernel says connected as user id 1000 (`SO_PEERCRED`), a user of the file as
    /// `[users."uid:1000"]`, with only the anonymous permissions if it is not there.
    pub fn unix_peer(&self, uid: u32) -> Principal {
        Principal::new(format!("uid:{uid}"), Via::Peer)
    }

    /// May `who` (`None`: no credentials) call `verb` (its registered name)?
    /// Deny wins over allow; an authenticated caller may also call what `anonymous`
    /// may. Cheap: asked before every call.
    pub fn allows(&self, who: Option<&Principal>, verb: &str) -> Decision {
        let policy = self.policy.load();
        // `anonymous` is matched only when it decides: not for a user its rules allow.
        let anonymous = || glob::any(&policy.anonymous, verb);
        let Some(who) = who.filter(|p| current(p)) else {
            return match anonymous() {
                true => Decision::Allowed,
                false => Decision::NotAuthenticated,
            };
        };
        match rules(&policy, who) {
            Some(rules) if glob::any(&rules.deny, verb) => Decision::Forbidden,
            Some(rules) if glob::any(&rules.allow, verb) => Decision::Allowed,
            _ if anonymous() => Decision::Allowed,
            _ => Decision::Forbidden,
        }
    }

    /// May `who` receive the event named `event`? Asked per subscriber per event.
    /// A caller without credentials (or whose token expired) receives none.
    pub fn sees(&self, who: Option<&Principal>, event: &str) -> bool {
        let Some(who) = who.filter(|p| current(p)) else {
            return false;
        };
        let policy = self.policy.load();
        rules(&policy, who).is_some_and(|rules| glob::any(&rules.events, event))
    }

    /// Which policy is in force: a number that changes with every [`Auth::reload`]. What
    /// a connection remembers of its credentials is good for this generation only.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Whether the policy checks tokens at all (`[jwt]`): a server says `Bearer` in
    /// `WWW-Authenticate` only then.
    pub fn accepts_tokens(&self) -> bool {
        self.policy.load().jwt.is_some()
    }

    /// Whether a caller without credentials may call anything at all (`anonymous` is
    /// not empty): an HTTP server then serves requests that carry no `Authorization`
    /// (checking each call) instead of answering them `401`.
    pub fn allows_anonymous(&self) -> bool {
        !self.policy.load().anonymous.is_empty()
    }
}

/// Whether `p`'s proof still holds.
fn current(p: &Principal) -> bool {
    p.is_current()
}

/// `who`'s rules in `policy`. A `uid:N` user's only for the kernel's own account of a
/// Unix socket's peer, whatever else made a principal of that name.
fn rules<'p>(policy: &'p Policy, who: &Principal) -> Option<&'p crate::policy::Rules> {
    if Principal::is_local_user_name(who.name()) && who.via() != Via::Peer {
        return None;
    }
    policy.rules(who.name())
}

fn rejected(detail: &'static str) -> Failure {
    Failure::Rejected { detail }
}

fn pool_failure(refused: Refused) -> Failure {
    match refused {
        Refused::Busy => Failure::Busy,
        Refused::Panicked => rejected("verifier panicked"),
    }
}
