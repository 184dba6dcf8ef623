//! `allows` and `sees`: allow, deny, anonymous, expiry.

use rpcmux_auth::{Auth, Decision, Policy, Principal, Via};
use std::path::Path;
use std::time::{Duration, SystemTime};

fn auth() -> Auth {
    let text = r#"
        anonymous = ["ping", "system.*", "VM.destroy"]
        [groups.operators]
        allow = ["VM.*", "Host.?et"]
        deny = ["VM.destroy", "VM.migrate"]
        events = ["|virt|*"]
        [groups.auditors]
        allow = ["VM.migrate", "log.*"]
        events = ["audit.*"]
        [users.alice]
        groups = ["operators", "auditors"]
        allow = ["echo"]
        [users.bob]
        deny = ["system.shutdown", "ping"]
        [users.root]
        allow = ["*"]
        events = ["*"]
    "#;
    Auth::new(Policy::from_toml(text, Path::new(".")).unwrap())
}

fn user(name: &str) -> Principal {
    Principal::new(name, Via::Password)
}

#[test]
fn without_credentials_only_anonymous() {
    let auth = auth();
    assert_eq!(auth.allows(None, "ping"), Decision::Allowed);
    assert_eq!(auth.allows(None, "system.listMethods"), Decision::Allowed);
    assert_eq!(auth.allows(None, "VM.start"), Decision::NotAuthenticated);
    assert_eq!(auth.allows(None, "pin"), Decision::NotAuthenticated);
}

#[test]
fn users_and_groups() {
    let auth = auth();
    let alice = user("alice");
    assert_eq!(auth.allows(Some(&alice), "VM.start"), Decision::Allowed);
    assert_eq!(auth.allows(Some(&alice), "Host.get"), Decision::Allowed);
    assert_eq!(auth.allows(Some(&alice), "Host.gets"), Decision::Forbidden);
    assert_eq!(auth.allows(Some(&alice), "echo"), Decision::Allowed);
    assert_eq!(auth.allows(Some(&alice), "log.read"), Decision::Allowed);
    assert_eq!(auth.allows(Some(&alice), "other"), Decision::Forbidden);
    assert_eq!(
        auth.allows(Some(&alice), "ping"),
        Decision::Allowed,
        "anonymous too"
    );
    // Deny wins: over the user's own allow via another group, and over anonymous.
    assert_eq!(auth.allows(Some(&alice), "VM.migrate"), Decision::Forbidden);
    assert_eq!(auth.allows(Some(&alice), "VM.destroy"), Decision::Forbidden);
    let bob = user("bob");
    assert_eq!(auth.allows(Some(&bob), "ping"), Decision::Forbidden);
    assert_eq!(
        auth.allows(Some(&bob), "system.shutdown"),
        Decision::Forbidden
    );
    assert_eq!(
        auth.allows(Some(&bob), "system.listMethods"),
        Decision::Allowed
    );
    let root = user("root");
    assert_eq!(
        auth.allows(Some(&root), "anything.at|all"),
        Decision::Allowed
    );
}

#[test]
fn a_name_not_in_the_file_gets_anonymous_only() {
    let auth = auth();
    let stranger = auth.certificate("stranger").unwrap();
    assert_eq!(stranger.via(), Via::Certificate);
    assert_eq!(auth.allows(Some(&stranger), "ping"), Decision::Allowed);
    assert_eq!(
        auth.allows(Some(&stranger), "VM.start"),
        Decision::Forbidden
    );
    assert!(!auth.sees(Some(&stranger), "|virt|x"));
    let root = auth.certificate("root").unwrap();
    assert_eq!(auth.allows(Some(&root), "VM.start"), Decision::Allowed);
}

#[test]
fn an_expired_principal_is_no_principal() {
    let auth = auth();
    let past = SystemTime::now() - Duration::from_secs(1);
    let future = SystemTime::now() + Duration::from_secs(60);
    let gone = Principal::new("root", Via::Token).expiring(past);
    assert_eq!(
        auth.allows(Some(&gone), "VM.start"),
        Decision::NotAuthenticated
    );
    assert_eq!(auth.allows(Some(&gone), "ping"), Decision::Allowed);
    assert!(!auth.sees(Some(&gone), "anything"));
    let live = Principal::new("root", Via::Token).expiring(future);
    assert_eq!(auth.allows(Some(&live), "VM.start"), Decision::Allowed);
    assert!(auth.sees(Some(&live), "anything"));
}

#[test]
fn events() {
    let auth = auth();
    let alice = user("alice");
    assert!(auth.sees(Some(&alice), "|virt|VM_status|1"));
    assert!(auth.sees(Some(&alice), "audit.login"));
    assert!(!auth.sees(Some(&alice), "|net|up"));
    assert!(!auth.sees(Some(&user("bob")), "|virt|x"));
    assert!(
        !auth.sees(None, "|virt|x"),
        "anonymous callers see no events"
    );
    assert!(auth.sees(Some(&user("root")), "x"));
}
