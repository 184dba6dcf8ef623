//! Logins through [`Auth`], watching what only the crate can see: how many argon2 runs
//! happened, the queue of the verification pool.

use crate::password::cheap_hash;
use crate::pool::Pool;
use crate::throttle::{Name, Throttle};
use crate::{Auth, Authenticate, Credentials, Failure, Policy, Principal, Via};
use futures_util::future::BoxFuture;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

fn policy() -> Policy {
    let text = format!(
        r#"
        [users.alice]
        password = "{}"
        allow = ["*"]
        [users.engine]
        allow = ["*"]
        "#,
        cheap_hash("wonderland")
    );
    Policy::from_toml(&text, Path::new(".")).unwrap()
}

fn auth() -> Auth {
    Auth::with_parts(policy(), None, Pool::new(2, 4), Throttle::new())
}

fn password(user: &str, password: &str) -> Credentials {
    Credentials::Password {
        user: user.into(),
        password: password.into(),
    }
}

fn runs(auth: &Auth) -> usize {
    auth.argon2_runs.load(Ordering::SeqCst)
}

#[tokio::test]
async fn password_good_bad_unknown() {
    let auth = auth();
    let alice = auth.login(&password("alice", "wonderland"), HOME).await;
    assert_eq!(alice, Ok(Principal::new("alice", Via::Password)));
    let bad = auth.login(&password("alice", "looking-glass"), HOME).await;
    assert_eq!(
        bad,
        Err(Failure::Rejected {
            detail: "bad password"
        })
    );
    let before = runs(&auth);
    let unknown = auth.login(&password("mallory", "wonderland"), HOME).await;
    assert_eq!(
        unknown,
        Err(Failure::Rejected {
            detail: "unknown user"
        })
    );
    assert_eq!(
        runs(&auth),
        before + 1,
        "an unknown user costs an argon2 run too"
    );
    let engine = auth.login(&password("engine", ""), HOME).await;
    assert_eq!(
        engine,
        Err(Failure::Rejected {
            detail: "user has no password"
        })
    );
}

#[tokio::test]
async fn a_remembered_success_skips_argon2() {
    let auth = auth();
    auth.login(&password("alice", "wonderland"), HOME)
        .await
        .unwrap();
    assert_eq!(runs(&auth), 1);
    for _ in 0..3 {
        auth.login(&password("alice", "wonderland"), AWAY)
            .await
            .unwrap();
    }
    assert_eq!(runs(&auth), 1, "served from the cache");
    // Failures are not remembered: each costs a run.
    for n in 2..4 {
        let _ = auth.login(&password("alice", "nope"), HOME).await;
        assert_eq!(runs(&auth), n);
    }
    // Forgotten on reload (here: cleared as reload does).
    auth.cache.clear();
    auth.login(&password("alice", "wonderland"), HOME)
        .await
        .unwrap();
    assert_eq!(runs(&auth), 4);
}

#[tokio::test]
async fn failures_lock_out_without_verifying() {
    let auth = auth();
    for _ in 0..5 {
        let r = auth.login(&password("mallory", "guess"), HOME).await;
        assert!(matches!(r, Err(Failure::Rejected { .. })), "{r:?}");
    }
    let before = runs(&auth);
    let r = auth.login(&password("alice", "wonderland"), HOME).await;
    assert!(matches!(r, Err(Failure::Throttled { .. })), "{r:?}");
    let r = auth.login(&password("mallory", "guess"), HOME).await;
    let Err(Failure::Throttled { retry_after }) = r else {
        panic!("{r:?}")
    };
    assert!(retry_after.as_secs_f64() <= 1.0, "{retry_after:?}");
    assert_eq!(runs(&auth), before, "nothing verified while throttled");
    // Another address is not affected.
    let r = auth.login(&password("alice", "wonderland"), AWAY).await;
    assert!(r.is_ok(), "{r:?}");
}

#[tokio::test]
async fn an_existing_user_is_throttled_from_any_address() {
    let auth = auth();
    for i in 0..5u8 {
        let ip = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, i));
        let _ = auth.login(&password("alice", "guess"), ip).await;
    }
    let before = runs(&auth);
    let r = auth.login(&password("alice", "wonderland"), AWAY).await;
    assert!(matches!(r, Err(Failure::Throttled { .. })), "{r:?}");
    assert_eq!(runs(&auth), before);
}

#[tokio::test]
async fn a_flood_against_a_user_spares_credentials_that_verified_lately() {
    let auth = auth();
    auth.login(&password("alice", "wonderland"), HOME)
        .await
        .unwrap();
    for i in 0..8u8 {
        let ip = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, i));
        let _ = auth.login(&password("alice", "guess"), ip).await;
    }
    assert!(
        auth.throttle
            .check(AWAY, Some(Name::Known("alice")))
            .is_err(),
        "locked"
    );
    let before = runs(&auth);
    let r = auth.login(&password("alice", "wonderland"), AWAY).await;
    assert_eq!(r.map(|p| p.name().to_owned()), Ok("alice".to_owned()));
    assert_eq!(runs(&auth), before, "from the cache, nothing verified");
    // A guess is still refused unverified.
    let r = auth.login(&password("alice", "guess2"), AWAY).await;
    assert!(matches!(r, Err(Failure::Throttled { .. })), "{r:?}");
    assert_eq!(runs(&auth), before);
}

#[tokio::test]
async fn a_success_resets_the_count() {
    let auth = auth();
    for _ in 0..4 {
        let _ = auth.login(&password("alice", "guess"), HOME).await;
    }
    auth.login(&password("alice", "wonderland"), HOME)
        .await
        .unwrap();
    for _ in 0..4 {
        let _ = auth.login(&password("alice", "guess"), HOME).await;
    }
    assert_eq!(
        auth.throttle.check(HOME, Some(Name::Known("alice"))),
        Ok(()),
        "4 of 5, not 8"
    );
}

#[tokio::test]
async fn busy_past_the_queue() {
    let auth = Arc::new(Auth::with_parts(
        policy(),
        None,
        Pool::new(1, 1),
        Throttle::new(),
    ));
    let held = auth.pool.hold_all();
    let waiter = {
        let auth = auth.clone();
        tokio::spawn(async move { auth.login(&password("alice", "wonderland"), HOME).await })
    };
    while auth.pool.waiting() == 0 {
        tokio::task::yield_now().await;
    }
    let r = auth.login(&password("alice", "other"), AWAY).await;
    assert_eq!(r, Err(Failure::Busy));
    assert_eq!(runs(&auth), 0, "nothing verified");
    assert_eq!(
        auth.throttle.check(AWAY, Some(Name::Known("alice"))),
        Ok(())
    );
    drop(held);
    assert!(waiter.await.unwrap().is_ok());
}

#[tokio::test]
async fn tokens_without_jwt_are_unsupported() {
    let auth = auth();
    let r = auth.login(&Credentials::Token("a.b.c".into()), HOME).await;
    assert_eq!(r, Err(Failure::Unsupported));
    assert!(!auth.accepts_tokens());
}

/// Knows "carol" (password "c"), refuses "dave", leaves the rest to the file.
struct Directory;

impl Authenticate for Directory {
    fn authenticate(
        &self,
        credentials: &Credentials,
        _source: IpAddr,
    ) -> BoxFuture<'static, Result<Option<String>, ()>> {
        let answer = match credentials {
            Credentials::Password { user, password } if user == "carol" && password == "c" => {
                Ok(Some("carol".to_owned()))
            }
            Credentials::Password { user, .. } if user == "dave" => Err(()),
            _ => Ok(None),
        };
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn the_authenticator_comes_before_the_file() {
    let auth = auth().with_authenticator(Arc::new(Directory));
    let carol = auth.login(&password("carol", "c"), HOME).await;
    assert_eq!(carol, Ok(Principal::new("carol", Via::Custom)));
    let dave = auth.login(&password("dave", "d"), HOME).await;
    assert!(matches!(dave, Err(Failure::Rejected { .. })), "{dave:?}");
    let alice = auth.login(&password("alice", "wonderland"), HOME).await;
    assert_eq!(alice, Ok(Principal::new("alice", Via::Password)));
    assert_eq!(runs(&auth), 1, "only alice's went to argon2");
}

#[test]
fn auth_is_shareable_and_logins_are_spawnable() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let auth = auth();
    send_sync(&auth);
    let credentials = password("alice", "x");
    let login = auth.login(&credentials, HOME);
    send(&login);
}

#[test]
fn policy_debug_shows_no_hash() {
    let shown = format!("{:?}", policy());
    assert!(
        shown.contains("alice") && shown.contains("engine"),
        "{shown}"
    );
    assert!(!shown.contains("argon2"), "{shown}");
}

#[test]
fn a_unix_peer_is_the_user_its_uid_names() {
    let text = "[users.\"uid:1000\"]\nallow = [\"VM.*\"]\n";
    let auth = Auth::with_parts(
        Policy::from_toml(text, Path::new(".")).unwrap(),
        None,
        Pool::new(1, 1),
        Throttle::new(),
    );
    let peer = auth.unix_peer(1000);
    assert_eq!(peer, Principal::new("uid:1000", Via::Peer));
    assert_eq!(
        auth.allows(Some(&peer), "VM.create"),
        crate::Decision::Allowed
    );
    let other = auth.unix_peer(1001);
    assert_eq!(
        auth.allows(Some(&other), "VM.create"),
        crate::Decision::Forbidden
    );
}

/// Issue 39, finding 11: five failures for a name lock it out from every address
/// whether the file has it or not, with the same answer: a lockout tells nothing of
/// who exists.
#[tokio::test]
async fn known_and_unknown_names_lock_out_alike() {
    let auth = auth();
    for name in ["alice", "nobody"] {
        for i in 0..5u8 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, i));
            let r = auth.login(&password(name, "guess"), ip).await;
            assert!(matches!(r, Err(Failure::Rejected { .. })), "{name}: {r:?}");
        }
    }
    let alice = auth.login(&password("alice", "guess"), AWAY).await;
    let nobody = auth.login(&password("nobody", "guess"), AWAY).await;
    assert!(matches!(alice, Err(Failure::Throttled { .. })), "{alice:?}");
    assert!(
        matches!(nobody, Err(Failure::Throttled { .. })),
        "{nobody:?}"
    );
    let shown = |r: Result<Principal, Failure>| r.unwrap_err().to_string();
    assert_eq!(shown(alice), shown(nobody), "answered alike");
}

/// Issue 39, finding 12: an attempt refused "busy" counts toward its source's
/// throttle, so a flood that only meets a full queue is throttled all the same.
#[tokio::test]
async fn busy_refusals_count_toward_the_source() {
    let auth = Auth::with_parts(policy(), None, Pool::new(1, 0), Throttle::new());
    let _held = auth.pool.hold_all();
    for _ in 0..5 {
        let r = auth.login(&password("nobody", "guess"), AWAY).await;
        assert_eq!(r, Err(Failure::Busy));
    }
    let r = auth.login(&password("nobody", "guess"), AWAY).await;
    assert!(matches!(r, Err(Failure::Throttled { .. })), "{r:?}");
    assert_eq!(auth.throttle.check(HOME, None), Ok(()), "only that source");
}

/// Issue 39, finding 12: with every shared slot taken and the queue full, a source
/// whose last login succeeded is still verified (its own slot), and one source cannot
/// hold more than its share of the queue.
#[tokio::test]
async fn a_source_in_good_standing_gets_through_a_full_queue() {
    let auth = Arc::new(Auth::with_parts(
        policy(),
        None,
        Pool::new(1, 3),
        Throttle::new(),
    ));
    auth.login(&password("alice", "wonderland"), HOME)
        .await
        .unwrap();
    auth.cache.clear();
    let held = auth.pool.hold_all();
    let flood = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 7));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let auth = auth.clone();
            tokio::spawn(async move { auth.login(&password("x", "y"), flood).await })
        })
        .collect();
    while auth.pool.waiting() < 2 {
        tokio::task::yield_now().await;
    }
    let third = auth.login(&password("x", "y"), flood).await;
    assert_eq!(third, Err(Failure::Busy), "past its share of the queue");
    assert_eq!(
        auth.pool.waiting(),
        2,
        "the queue still has room for others"
    );
    let other = {
        let auth = auth.clone();
        tokio::spawn(async move { auth.login(&password("x", "y"), AWAY).await })
    };
    while auth.pool.waiting() < 3 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        auth.login(
            &password("x", "y"),
            IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 8))
        )
        .await,
        Err(Failure::Busy),
        "the queue is full"
    );
    let r = auth.login(&password("alice", "wonderland"), HOME).await;
    assert_eq!(r, Ok(Principal::new("alice", Via::Password)), "verified");
    drop(held);
    for w in waiters {
        assert!(matches!(w.await.unwrap(), Err(Failure::Rejected { .. })));
    }
    assert!(matches!(
        other.await.unwrap(),
        Err(Failure::Rejected { .. })
    ));
}

/// `uid:N` is the kernel's name for a Unix socket's peer only: a certificate (or a
/// PROXY header's certificate name) of that form makes no principal, and a principal
/// of that name made any other way gets no `uid:N` user's rules.
#[test]
fn only_the_kernel_names_local_users() {
    let text = "[users.\"uid:0\"]\nallow = [\"*\"]\n";
    let auth = Auth::with_parts(
        Policy::from_toml(text, Path::new(".")).unwrap(),
        None,
        Pool::new(1, 1),
        Throttle::new(),
    );
    assert_eq!(auth.certificate("uid:0"), None);
    assert!(auth.certificate("engine").is_some());
    let forged = Principal::new("uid:0", Via::Token);
    assert_eq!(
        auth.allows(Some(&forged), "VM.destroy"),
        crate::Decision::Forbidden
    );
    assert_eq!(
        auth.allows(Some(&auth.unix_peer(0)), "VM.destroy"),
        crate::Decision::Allowed
    );
}

/// An authenticator naming a local uid is refused.
#[tokio::test]
async fn an_authenticator_cannot_name_a_local_uid() {
    struct Forger;
    impl Authenticate for Forger {
        fn authenticate(
            &self,
            _: &Credentials,
            _: IpAddr,
        ) -> BoxFuture<'static, Result<Option<String>, ()>> {
            Box::pin(async { Ok(Some("uid:0".to_owned())) })
        }
    }
    let auth = auth().with_authenticator(Arc::new(Forger));
    let r = auth.login(&password("x", "y"), HOME).await;
    assert!(matches!(r, Err(Failure::Rejected { .. })), "{r:?}");
}

/// The unknown user's dummy hash costs what the costliest hash of the file does,
/// whichever user comes first.
#[test]
fn the_dummy_hash_is_the_costliest() {
    use argon2::password_hash::PasswordHasher;
    let costly = argon2::Argon2::from(argon2::Params::new(256, 3, 1, None).unwrap())
        .hash_password(b"x")
        .unwrap()
        .to_string();
    let text = format!(
        "[users.a]\npassword = \"{}\"\n[users.b]\npassword = \"{costly}\"\n[users.c]\npassword = \"{}\"\n",
        cheap_hash("x"),
        cheap_hash("y")
    );
    let policy = Policy::from_toml(&text, Path::new(".")).unwrap();
    assert!(
        policy
            .dummy_hash
            .starts_with("$argon2id$v=19$m=256,t=3,p=1$"),
        "{}",
        policy.dummy_hash
    );
}

/// Every reload is a new generation (what connections remember is keyed to it).
#[test]
fn a_reload_is_a_new_generation() {
    let dir = std::env::temp_dir().join(format!("rpcmux-auth-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("creds.toml");
    std::fs::write(&path, "anonymous = [\"ping\"]\n").unwrap();
    let auth = Auth::from_file(&path).unwrap();
    let before = auth.generation();
    auth.reload().unwrap();
    assert_ne!(auth.generation(), before);
    let _ = std::fs::remove_dir_all(&dir);
}
