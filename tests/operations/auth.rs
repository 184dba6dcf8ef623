//! `--auth`: who may call what, end to end against the binary. Stock clients (Python's
//! xmlrpc.client with `user:pass@` URLs, stomp.py with login/passcode) in
//! tests/python/auth_clients.py; here the paths without a stock client (raw-TCP
//! JSON-RPC with `rpc.login`, JSON-RPC batches over HTTP, events), each refusal checked
//! by what did not happen as well as by its error.

use crate::common::hostile::{error_code, Lines};
use crate::common::{http_post, run_py, Server};

/// A credentials file: anonymous may ping; alice (password "wonderland") is an operator
/// (VM.*, Host.*, echo, subscribe; not VM.destroy) and sees |virt| events. `more` is
/// TOML appended to it (more users, a `[jwt]` section).
pub(crate) fn credentials(dir: &std::path::Path, more: &str) -> std::path::PathBuf {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .arg("passwd")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"wonderland\n")?;
            c.wait_with_output()
        })
        .expect("rpcmux passwd");
    assert!(out.status.success());
    let hash = String::from_utf8(out.stdout).unwrap();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    let path = dir.join("creds.toml");
    std::fs::write(
        &path,
        format!(
            r#"anonymous = ["ping"]
[users.alice]
password = "{}"
groups = ["operators"]
[groups.operators]
allow = ["VM.*", "Host.*", "echo", "subscribe", "system.*"]
deny = ["VM.destroy"]
events = ["|virt|*"]
{}"#,
            hash.trim(),
            more
        ),
    )
    .unwrap();
    path
}

/// A fresh directory for one test's files.
pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcmux-auth-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(name: &str) -> Server {
    let creds = credentials(&scratch(name), "");
    Server::start(&["--auth", creds.to_str().unwrap()])
}

#[test]
fn stock_clients_log_in_and_forbidden_calls_do_nothing() {
    let srv = start("stock");
    let out = run_py(
        "auth_clients.py",
        &["127.0.0.1", &srv.addr.port().to_string()],
    );
    assert!(out.trim().ends_with("ok"), "{out}");
}

#[test]
fn rpc_login_binds_a_raw_tcp_connection() {
    let srv = start("login");
    let mut c = Lines::connect(srv.addr).unwrap();
    let mut call = |line: &str| {
        c.send(format!("{line}\n").as_bytes()).unwrap();
        c.json(1 << 20).unwrap()
    };
    let r = call(r#"{"jsonrpc":"2.0","id":1,"method":"VM.create","params":["tcp-vm","n"]}"#);
    assert_eq!(error_code(&r), Some(-32020), "{r}");
    let r = call(
        r#"{"jsonrpc":"2.0","id":2,"method":"rpc.login","params":{"user":"alice","password":"nope"}}"#,
    );
    assert_eq!(error_code(&r), Some(-32022), "{r}");
    assert!(!r.to_string().contains("nope"), "the secret echoed: {r}");
    let r = call(
        r#"{"jsonrpc":"2.0","id":3,"method":"rpc.login","params":{"user":"alice","password":"wonderland"}}"#,
    );
    assert_eq!(r["result"]["principal"], "alice", "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":4,"method":"VM.create","params":["tcp-vm","n"]}"#);
    assert!(r.get("error").is_none(), "{r}");
    // A batch smuggling VM.destroy: that member alone is refused, the VM stays.
    let r = call(
        r#"[{"jsonrpc":"2.0","id":5,"method":"echo","params":["a"]},{"jsonrpc":"2.0","id":6,"method":"VM.destroy","params":["tcp-vm"]}]"#,
    );
    let codes: Vec<_> = r.as_array().unwrap().iter().map(error_code).collect();
    assert!(
        codes.contains(&Some(-32021)) && codes.contains(&None),
        "{r}"
    );
    let r = call(r#"{"jsonrpc":"2.0","id":7,"method":"Host.getVMList"}"#);
    assert!(
        r["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "tcp-vm"),
        "VM.destroy ran inside a batch: {r}"
    );
    // A name that does not exist is as forbidden as one that does: nothing leaks.
    let r = call(r#"{"jsonrpc":"2.0","id":8,"method":"secret.thing"}"#);
    assert_eq!(error_code(&r), Some(-32021), "{r}");
}

#[test]
fn events_reach_only_principals_allowed_to_see_them() {
    let srv = start("events");
    // alice subscribes to everything; an anonymous caller cannot subscribe at all.
    let mut anon = Lines::connect(srv.addr).unwrap();
    anon.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscribe\",\"params\":[\"*\"]}\n")
        .unwrap();
    assert_eq!(error_code(&anon.json(1 << 20).unwrap()), Some(-32020));
    let mut a = Lines::connect(srv.addr).unwrap();
    a.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"rpc.login\",\"params\":{\"user\":\"alice\",\"password\":\"wonderland\"}}\n").unwrap();
    assert_eq!(a.json(1 << 20).unwrap()["result"]["principal"], "alice");
    a.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"subscribe\",\"params\":[\"*\"]}\n")
        .unwrap();
    assert!(a.json(1 << 20).unwrap().get("result").is_some());
    // An event she may not see, then one she may: only the second arrives.
    a.send(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"Host.publishEvent\",\"params\":[\"|secret|thing\",{}]}\n").unwrap();
    a.send(
        b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"VM.create\",\"params\":[\"ev-vm\",\"n\"]}\n",
    )
    .unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let m = a.json(1 << 20).unwrap();
        if let Some(method) = m.get("method").and_then(|v| v.as_str()) {
            seen.push(method.to_owned());
        }
        if seen.iter().any(|s| s.starts_with("|virt|")) {
            break;
        }
    }
    assert!(
        seen.iter().any(|s| s.starts_with("|virt|VM_status|")),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|s| s.starts_with("|secret|")), "{seen:?}");
}

#[test]
fn http_without_credentials_is_challenged_when_nothing_is_anonymous() {
    let path = scratch("challenge").join("creds.toml");
    std::fs::write(&path, "[users.engine]\nallow = [\"*\"]\n").unwrap();
    let srv = Server::start(&["--auth", path.to_str().unwrap()]);
    let (status, head, _) = http_post(
        srv.addr,
        Some("application/json"),
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_eq!(status, 401, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: basic"),
        "{head}"
    );
}

#[test]
fn rpc_login_over_http_lasts_for_its_request_only() {
    use crate::common::hostile::{dial, read_response, ANSWER_TIMEOUT};
    use std::io::Write;
    let srv = start("http-login");
    // One keep-alive connection, as a proxy's pool would carry two clients' requests.
    let mut s = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    let mut call = |body: &str| {
        let req = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        read_response(&mut s, 1 << 20).unwrap().json().unwrap()
    };
    let r = call(
        r#"{"jsonrpc":"2.0","id":1,"method":"rpc.login","params":{"user":"alice","password":"wonderland"}}"#,
    );
    assert_eq!(r["result"]["principal"], "alice", "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":2,"method":"VM.create","params":["http-vm","n"]}"#);
    assert_eq!(
        error_code(&r),
        Some(-32020),
        "the login outlived its request: {r}"
    );
    let r = call(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(r["result"], true, "{r}");
}

/// Issue 39 (smaller): the README's user, whose rules name only `VM.*`, `Host.*` and
/// `echo`, may call introspection and `subscribe` (each shows only what it may call
/// or see); a refusal names the name asked for, never an alias's target, so an alias
/// of a forbidden verb, the verb and a name with no verb are refused alike.
#[test]
fn authenticated_callers_introspect_and_refusals_name_the_name_asked_for() {
    let dir = scratch("readme-user");
    let creds = credentials(&dir, "[users.bob]\nallow = [\"echo\"]\n");
    // bob's password is alice's (the same hash: one `rpcmux passwd` run is enough).
    let text = std::fs::read_to_string(&creds).unwrap();
    let hash = text.split('"').nth(3).unwrap().to_owned();
    std::fs::write(
        &creds,
        text.replace(
            "[users.bob]\n",
            &format!("[users.bob]\npassword = \"{hash}\"\n"),
        ),
    )
    .unwrap();
    let srv = Server::start(&["--auth", creds.to_str().unwrap()]);
    let mut c = Lines::connect(srv.addr).unwrap();
    let mut call = |line: &str| {
        c.send(format!("{line}\n").as_bytes()).unwrap();
        c.json(1 << 20).unwrap()
    };
    let r = call(
        r#"{"jsonrpc":"2.0","id":1,"method":"rpc.login","params":{"user":"bob","password":"wonderland"}}"#,
    );
    assert_eq!(r["result"]["principal"], "bob", "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":2,"method":"system.listMethods"}"#);
    let names = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert!(names.iter().any(|n| n == "echo"), "{r}");
    assert!(
        !names.iter().any(|n| n == "VM.create"),
        "only what bob may call: {r}"
    );
    let r = call(r#"{"jsonrpc":"2.0","id":3,"method":"system.methodHelp","params":["echo"]}"#);
    assert!(r["result"].is_string(), "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":4,"method":"system.methodSignature","params":["echo"]}"#);
    assert!(r.get("error").is_none(), "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":5,"method":"rpc.discover"}"#);
    assert!(r["result"]["methods"].is_array(), "{r}");
    let r = call(r#"{"jsonrpc":"2.0","id":6,"method":"subscribe","params":["*"]}"#);
    assert!(r.get("error").is_none(), "{r}");
    // `list` is the demo's alias of Host.getVMList, which bob may not call.
    let messages: Vec<String> = ["list", "Host.getVMList", "no.such.verb"]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let r = call(&format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"{m}"}}"#,
                10 + i
            ));
            assert_eq!(error_code(&r), Some(-32021), "{m}: {r}");
            r["error"]["message"].as_str().unwrap().replace(m, "NAME")
        })
        .collect();
    assert_eq!(
        messages[0], "forbidden: bob may not call \"NAME\"",
        "{messages:?}"
    );
    assert!(
        messages.iter().all(|m| *m == messages[0]),
        "alike: {messages:?}"
    );
    // Anonymous callers still may not.
    let mut anon = Lines::connect(srv.addr).unwrap();
    anon.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"system.listMethods\"}\n")
        .unwrap();
    assert_eq!(error_code(&anon.json(1 << 20).unwrap()), Some(-32020));
}

/// `POST /RPC2` with `Authorization: auth`, the connection kept open (keep-alive).
fn keep_alive_post(auth: &str) -> Vec<u8> {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["x"]}"#;
    let mut req = format!(
        "POST /RPC2 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: {auth}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {b64}")
}

/// Issue 39, finding 9: after the password changes and SIGHUP, an open keep-alive
/// connection that proved the old password is asked for it again, and refused: the
/// connection's memory of its credentials is good for one policy generation only.
#[test]
fn sighup_reaches_a_live_keep_alive_connection() {
    use crate::common::hostile::{dial, read_response, ANSWER_TIMEOUT};
    use std::io::Write;
    let dir = scratch("sighup-live");
    let creds = credentials(&dir, "");
    let srv = Server::start(&["--auth", creds.to_str().unwrap()]);
    let mut keep = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    let old = basic("alice", "wonderland");
    keep.write_all(&keep_alive_post(&old)).unwrap();
    let r = read_response(&mut keep, 1 << 16).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    // A new password for alice, hashed by `rpcmux passwd` as the old one was.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .arg("passwd")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(b"looking-glass\n")?;
            c.wait_with_output()
        })
        .unwrap();
    let new_hash = String::from_utf8(out.stdout).unwrap();
    let current = std::fs::read_to_string(&creds).unwrap();
    let old_hash = current.split('"').nth(3).unwrap().to_owned();
    std::fs::write(&creds, current.replace(&old_hash, new_hash.trim())).unwrap();
    srv.sighup();
    srv.wait_count(
        "credentials reloaded",
        1,
        std::time::Duration::from_secs(10),
    );
    keep.write_all(&keep_alive_post(&old)).unwrap();
    let r = read_response(&mut keep, 1 << 16).unwrap();
    assert_eq!(
        r.status,
        401,
        "the old password on the live connection: {}",
        r.text()
    );
    // The new one works, on a fresh connection.
    let mut fresh = dial(srv.addr, ANSWER_TIMEOUT).unwrap();
    fresh
        .write_all(&keep_alive_post(&basic("alice", "looking-glass")))
        .unwrap();
    let r = read_response(&mut fresh, 1 << 16).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Issue 39, finding 11: wrong passwords lock a name out whether the file has it or
/// not, and both are answered alike (`429`, the same text but for the seconds): the
/// lockout does not tell who exists. Each attempt from its own address, so only the
/// name is counted. (No timing: each name is tried until its first 429.)
#[test]
fn a_lockout_tells_nothing_of_who_exists() {
    use crate::common::hostile::{dial_from, post_bytes, read_response, ANSWER_TIMEOUT, JSON};
    use std::io::Write;
    let srv = start("lockout-alike");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":["x"]}"#;
    let mut n = 0u8;
    let mut attempt = |user: &str| {
        n += 1;
        let from = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 9, n));
        let mut s = dial_from(from, srv.addr, ANSWER_TIMEOUT).unwrap();
        let auth = basic(user, "guess");
        s.write_all(&post_bytes(&[JSON, ("Authorization", &auth)], body))
            .unwrap();
        read_response(&mut s, 1 << 16).unwrap()
    };
    let mut locked = Vec::new();
    for user in ["alice", "nobody"] {
        let first_429 = (0..12).find_map(|_| {
            let r = attempt(user);
            match r.status {
                401 => None,
                429 => Some(r),
                other => panic!("{user}: HTTP {other}: {}", r.text()),
            }
        });
        let r = first_429.unwrap_or_else(|| panic!("{user} was never locked out"));
        assert!(r.header("Retry-After").is_some(), "{}", r.head);
        let text: String = r.text().chars().filter(|c| !c.is_ascii_digit()).collect();
        locked.push((user, text));
    }
    assert_eq!(locked[0].1, locked[1].1, "answered alike: {locked:?}");
}

/// Issue 39 (smaller): a verb glob of the credentials file that matches no verb is
/// warned about at start with its place, and again by a reload; and the config file's
/// `[auth] file`, relative, is found beside the config file whatever the server's
/// working directory (one rule for relative paths in every file).
#[test]
fn globs_matching_no_verb_are_warned_and_paths_are_beside_their_file() {
    let dir = scratch("globs-relative");
    let creds = credentials(&dir, "[users.bob]\nallow = [\"Vm.*\"]\n");
    let config = dir.join("rpcmux.toml");
    std::fs::write(
        &config,
        format!(
            "listen = [\"127.0.0.1:0\"]\ndemo = true\n[auth]\nfile = \"{}\"\n",
            creds.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    // The test's working directory is not `dir`: the relative name resolves beside
    // the config file or not at all.
    assert_ne!(std::env::current_dir().unwrap(), dir);
    let srv = Server::start(&["--config", config.to_str().unwrap()]);
    srv.wait_count(
        "users.bob.allow[0] \"Vm.*\" matches no verb",
        1,
        std::time::Duration::from_secs(10),
    );
    srv.sighup();
    srv.wait_count(
        "users.bob.allow[0] \"Vm.*\" matches no verb",
        2,
        std::time::Duration::from_secs(10),
    );
    // The credentials are in force: anonymous may ping, not echo.
    let (_, _, body) = http_post(
        srv.addr,
        None,
        br#"{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}"#,
    );
    assert!(
        String::from_utf8_lossy(&body).contains("-32020"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}
