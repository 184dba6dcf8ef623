//! Logins through [`Auth`], watching what only the crate can see: how many argon2 runs
//! happened, the queue of the verification pool.

use crate::password::cheap_hash;
use crate::pool::Pool;
use crate::throttle::Throttle;
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
    // Another address is not affected, and mallory (not in the file) is not counted
    // as a user.
    let r = auth.login(&password("alice", "wonderland"), AWAY).await;
    assert!(r.is_ok(), "{r:?}");
    assert!(auth.login(&password("mallory", "x"), AWAY).await.is_err());
    assert_eq!(auth.throttle.check(AWAY, Some("mallory")), Ok(()));
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
    assert!(auth.throttle.check(AWAY, Some("alice")).is_err(), "locked");
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
        auth.throttle.check(HOME, Some("alice")),
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
    assert_eq!(auth.throttle.check(AWAY, Some("alice")), Ok(()));
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
