//! Unix-domain sockets: every protocol sniffed on a socket file as on TCP, reached by
//! clients nobody here wrote (curl, netcat, supervisor's own XML-RPC transport,
//! aio-msgpack-rpc, Neovim's pynvim, jsonrpcclient, stompjs on `ws+unix:`), the
//! connecting process's credentials (SO_PEERCRED) as its identity, the socket file's
//! mode enforced by the kernel, stale files replaced, the file removed at exit, and
//! systemd socket activation of a socket file (`systemd-socket-activate`).

use crate::common::{self, Server};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A fresh directory for socket files (a socket path must stay under 108 bytes).
fn sock_dir(tag: &str) -> PathBuf {
    let d = common::temp_dir(&format!("unix-{tag}"));
    // Other users must reach the socket inside (the kernel checks the directory too).
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {:?}\nstdout {}\nstderr {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `curl --unix-socket PATH`, POSTing `body` to `url`, run as `as_user` when given
/// (`setpriv`, as root), else as ourselves.
fn curl(sock: &Path, url: &str, ctype: &str, body: &str, as_user: Option<u32>) -> Output {
    let mut cmd = match as_user {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            let id = uid.to_string();
            c.args(["--reuid", &id, "--regid", &id, "--clear-groups", "curl"]);
            c
        }
        None => Command::new("curl"),
    };
    cmd.args(["-sS", "--max-time", "10", "--unix-socket"])
        .arg(sock)
        .args([
            "-H",
            &format!("Content-Type: {ctype}"),
            "--data-binary",
            body,
            url,
        ])
        .output()
        .expect("curl")
}

fn whoami(sock: &Path, as_user: Option<u32>) -> Output {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"whoami"}"#;
    curl(sock, "http://localhost/", "application/json", body, as_user)
}

fn my_id(flag: &str) -> u32 {
    let out = Command::new("id").arg(flag).output().unwrap();
    text(&out.stdout).trim().parse().unwrap()
}

/// `rpcmux call` (or `bench`, or a `serve` that fails) with `args`.
fn rpcmux(args: &[&str]) -> Output {
    common::run_rpcmux(args, None)
}

#[test]
fn every_protocol_over_a_socket_file_names_the_peer_by_its_credentials() {
    let dir = sock_dir("all");
    let sock = dir.join("rpcmux.sock");
    let spec = format!("unix:{}", sock.display());
    let srv = Server::start(&[
        "--listen",
        "127.0.0.1:0",
        "--listen",
        &spec,
        "--unix-mode",
        "0600",
        "--access-log",
        "info",
    ]);
    assert_eq!(srv.unix, [spec.as_str()], "printed as given");
    let meta = std::fs::metadata(&sock).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "--unix-mode");

    // JSON-RPC over HTTP (curl): the peer is the kernel's account of curl.
    let reply = common::json(ok(whoami(&sock, None), "curl whoami").as_bytes());
    let (uid, gid) = (my_id("-u"), my_id("-g"));
    let peer = reply["result"]["peer"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        peer.starts_with(&format!("unix(uid={uid},gid={gid},pid=")),
        "{reply}"
    );
    assert_eq!(reply["result"]["protocol"], "jsonrpc-http");
    assert!(
        srv.wait_log("peer=unix(uid=", Duration::from_secs(5)),
        "the access log names the process: {}",
        srv.log()
    );

    // XML-RPC over HTTP (curl).
    let call = "<?xml version=\"1.0\"?><methodCall><methodName>echo</methodName>\
                <params><param><value><i4>-42</i4></value></param></params></methodCall>";
    let body = ok(
        curl(&sock, "http://localhost/RPC2", "text/xml", call, None),
        "curl xml-rpc",
    );
    assert!(
        body.contains("<int>-42</int>") || body.contains("<i4>-42</i4>"),
        "{body}"
    );

    // XML-RPC through supervisor's own transport, which dials `unix://` socket files
    // (what supervisorctl uses against supervisord's socket).
    let py = format!(
        "import xmlrpc.client, supervisor.xmlrpc as x\n\
         t = x.SupervisorTransport(None, None, serverurl='unix://{}')\n\
         p = xmlrpc.client.ServerProxy('http://127.0.0.1', transport=t)\n\
         print(p.echo('unix socket'), p.system.listMethods().count('whoami'))\n",
        sock.display()
    );
    let out = ok(
        Command::new("/usr/bin/python3")
            .args(["-c", &py])
            .output()
            .unwrap(),
        "supervisor's transport",
    );
    assert_eq!(out.trim(), "unix socket 1");

    // JSON-RPC over the raw stream (netcat-openbsd's -U).
    let out = Command::new("nc")
        .args(["-N", "-w", "5", "-U"])
        .arg(&sock)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(
                b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"echo\",\"params\":[12345678901234]}\n",
            )?;
            c.wait_with_output()
        })
        .expect("nc");
    let line = common::json(ok(out, "nc -U").trim().as_bytes());
    assert_eq!(line["id"], 7);
    assert_eq!(line["result"], 12345678901234u64);

    // Every stream protocol through rpcmux's own client, and a short bench.
    for proto in ["msgpack", "stomp", "jsonrpc-tcp", "jsonrpc", "xmlrpc"] {
        let out = rpcmux(&[
            "call",
            "--proto",
            proto,
            "--timeout",
            "20",
            &spec,
            "echo",
            "7",
        ]);
        assert_eq!(ok(out, proto).trim(), "7", "{proto}");
    }
    let out = rpcmux(&[
        "bench",
        "--proto",
        "msgpack",
        "--connections",
        "2",
        "--duration",
        "1",
        "--warmup",
        "0",
        &spec,
    ]);
    let report = ok(out, "bench over unix");
    let first_word = |label: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    assert_eq!(first_word("errors"), Some(0), "{report}");
    assert!(first_word("calls").is_some_and(|n| n > 0), "{report}");

    // The TCP listener beside it is unaffected.
    let tcp = rpcmux(&[
        "call",
        "--proto",
        "msgpack",
        &srv.addr.to_string(),
        "echo",
        "1",
    ]);
    assert_eq!(ok(tcp, "tcp").trim(), "1");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_file_mode_decides_who_connects_and_each_user_is_named() {
    if my_id("-u") != 0 {
        eprintln!("skipped: needs root to connect as another user (setpriv)");
        return;
    }
    let dir = sock_dir("mode");
    let closed = dir.join("closed.sock");
    let open = dir.join("open.sock");
    let srv_closed = Server::start(&[
        "--listen",
        &format!("unix:{}", closed.display()),
        "--unix-mode",
        "0600",
    ]);
    let srv_open = Server::start(&[
        "--listen",
        &format!("unix:{}", open.display()),
        "--unix-mode",
        "0666",
        "--unix-group",
        "nogroup",
    ]);
    let nobody = 65534;
    let refused = whoami(&closed, Some(nobody));
    assert!(!refused.status.success(), "0600 keeps nobody out");
    assert!(
        text(&refused.stderr).contains("ermission denied")
            || text(&refused.stderr).contains("Couldn't connect"),
        "{}",
        text(&refused.stderr)
    );
    let reply = common::json(ok(whoami(&open, Some(nobody)), "nobody on 0666").as_bytes());
    let peer = reply["result"]["peer"].as_str().unwrap_or_default();
    assert!(peer.starts_with("unix(uid=65534,gid=65534,pid="), "{reply}");
    let meta = std::fs::metadata(&open).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(meta.gid(), 65534, "--unix-group nogroup");
    drop((srv_closed, srv_open));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_uid_is_a_principal_the_policy_can_name() {
    let dir = sock_dir("auth");
    let sock = dir.join("rpcmux.sock");
    let uid = my_id("-u");
    let auth = dir.join("users.toml");
    std::fs::write(
        &auth,
        format!("anonymous = []\n[users.\"uid:{uid}\"]\nallow = [\"whoami\", \"echo\"]\n"),
    )
    .unwrap();
    let srv = Server::start(&[
        "--listen",
        "127.0.0.1:0",
        "--listen",
        &format!("unix:{}", sock.display()),
        "--auth",
        auth.to_str().unwrap(),
    ]);
    let reply = common::json(ok(whoami(&sock, None), "whoami over unix").as_bytes());
    assert_eq!(
        reply["result"]["principal"],
        format!("uid:{uid}"),
        "{reply}"
    );
    // The same call over TCP has no such identity: no credentials, refused.
    let tcp = rpcmux(&[
        "call",
        "--proto",
        "jsonrpc",
        &srv.addr.to_string(),
        "whoami",
    ]);
    assert!(!tcp.status.success(), "anonymous over TCP");
    // A verb outside the uid's rules is refused in the caller's protocol.
    let out = rpcmux(&[
        "call",
        "--proto",
        "msgpack",
        &format!("unix:{}", sock.display()),
        "ping",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an error reply: {}",
        text(&out.stderr)
    );
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stale_files_are_replaced_other_files_never_and_the_socket_goes_at_exit() {
    let dir = sock_dir("stale");
    let sock = dir.join("rpcmux.sock");
    // A socket file left behind by a crashed server: bound, closed, never removed.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let spec = format!("unix:{}", sock.display());
    let mut srv = Server::start(&["--listen", &spec]);
    let out = rpcmux(&["call", "--proto", "jsonrpc-tcp", &spec, "echo", "\"again\""]);
    assert_eq!(ok(out, "replaced socket").trim(), "\"again\"");

    // A second server on the live socket refuses to start and leaves it alone.
    let second = rpcmux(&["serve", "--listen", &spec]);
    assert!(!second.status.success());
    assert!(
        text(&second.stderr).contains("listening on this socket"),
        "{}",
        text(&second.stderr)
    );
    let out = rpcmux(&["call", "--proto", "jsonrpc-tcp", &spec, "echo", "1"]);
    assert_eq!(ok(out, "still served").trim(), "1");

    srv.sigterm();
    assert!(srv.wait_exit(Duration::from_secs(20)).success());
    assert!(!sock.exists(), "removed at a clean exit");

    // A regular file where the socket would go is never replaced.
    std::fs::write(&sock, b"precious").unwrap();
    let refused = rpcmux(&["serve", "--listen", &spec]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("not a socket"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(std::fs::read(&sock).unwrap(), b"precious");

    // An abstract socket: no file at all.
    let name = format!("unix:@rpcmux-test-{}", std::process::id());
    let srv = Server::start(&["--listen", &name]);
    assert_eq!(srv.unix, [name.as_str()]);
    let out = rpcmux(&["call", "--proto", "stomp", &name, "echo", "3"]);
    assert_eq!(ok(out, "abstract").trim(), "3");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn systemd_socket_activation_of_a_socket_file() {
    let dir = sock_dir("activate");
    let sock = dir.join("rpcmux.sock");
    // systemd's own tool: binds the socket file, and at the first connection passes it
    // as fd 3 (LISTEN_FDS=1, LISTEN_PID) and execs the server, as a `ListenStream=/path`
    // unit does. The server starts only when that first client knocks.
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg("-l")
        .arg(&sock)
        .args([env!("CARGO_BIN_EXE_rpcmux"), "serve"]);
    let starting = std::thread::spawn(move || Server::spawn_listeners(cmd, 1));
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while !sock.exists() && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first call is the one that starts the server, and is answered by it.
    let first = whoami(&sock, None);
    let srv = starting.join().expect("the activated server");
    assert_eq!(
        srv.unix,
        [format!("unix:{}", sock.display())],
        "only the passed socket"
    );
    let reply = common::json(ok(first, "activated").as_bytes());
    assert!(
        reply["result"]["peer"]
            .as_str()
            .unwrap_or_default()
            .starts_with("unix(uid="),
        "{reply}"
    );
    assert!(srv.log().contains("socket activation"), "{}", srv.log());
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stock_stream_clients_dial_the_socket_file() {
    let dir = sock_dir("stock");
    let sock = dir.join("rpcmux.sock");
    let srv = Server::start(&["--listen", &format!("unix:{}", sock.display())]);
    let path = sock.to_str().unwrap();
    // msgpack-rpc (aio-msgpack-rpc, Neovim's pynvim) and JSON-RPC lines (jsonrpcclient).
    let out = common::run_py("unix_stream_clients.py", &[path]);
    for client in ["aio-msgpack-rpc", "pynvim", "jsonrpcclient"] {
        assert!(out.contains(&format!("ok {client}")), "{out}");
    }
    // STOMP (over WebSocket) with @stomp/stompjs on Node's `ws`, which dials ws+unix:.
    let out = common::run_node("stomp_unix.mjs", &[path]);
    assert!(out.starts_with("ok stomp-unix unix(uid="), "{out}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_user_filling_its_connection_cap_leaves_the_others_served() {
    if my_id("-u") != 0 {
        eprintln!("skipped: needs root to connect as another user (setpriv)");
        return;
    }
    let dir = sock_dir("cap");
    let sock = dir.join("rpcmux.sock");
    let srv = Server::start(&[
        "--listen",
        &format!("unix:{}", sock.display()),
        "--unix-mode",
        "0666",
        "--max-connections-per-ip",
        "4",
    ]);
    // uid 0 holds four idle connections: its cap, counted by uid as there is no address.
    let held: Vec<_> = (0..4)
        .map(|_| std::os::unix::net::UnixStream::connect(&sock).unwrap())
        .collect();
    // A fifth from uid 0 is closed unanswered.
    let over = whoami(&sock, None);
    assert!(!over.status.success(), "uid 0 is over its cap");
    assert!(
        srv.wait_log(
            "too many connections from this client",
            Duration::from_secs(5)
        ),
        "{}",
        srv.log()
    );
    // Another user is counted apart and answered.
    let other = common::json(ok(whoami(&sock, Some(65534)), "nobody").as_bytes());
    let peer = other["result"]["peer"].as_str().unwrap_or_default();
    assert!(peer.starts_with("unix(uid=65534,"), "{other}");
    // Released slots are uid 0's again.
    drop(held);
    let end = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let again = whoami(&sock, None);
        if again.status.success() {
            break;
        }
        assert!(std::time::Instant::now() < end, "uid 0 never served again");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An argon2id hash of "wonderland" with tiny parameters (m=64 KiB, t=1): a debug build
/// verifies it at once. Made with `cryptography`'s Argon2id; the server checks it like
/// any other.
const CHEAP_WONDERLAND: &str =
    "$argon2id$v=19$m=64,t=1,p=1$cnBjbXV4LXRlc3Qtc2FsdA$Tq3oVktg2bhtKJbKu/afkCFaIql/wZqiRhpZ7XQNNoo";

/// tests/python/unix_raw.py with the system's Python (stdlib only, so any uid runs
/// it), as `as_user` when given.
fn unix_raw(sock: &Path, args: &[&str], as_user: Option<u32>) -> String {
    let script = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/unix_raw.py"),
    )
    .unwrap();
    let mut cmd = match as_user {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            let id = uid.to_string();
            c.args(["--reuid", &id, "--regid", &id, "--clear-groups", "python3"]);
            c
        }
        None => Command::new("python3"),
    };
    let out = cmd
        .env("PATH", "/usr/bin:/bin")
        .args(["-c", &script])
        .arg(sock)
        .args(args)
        .output()
        .expect("python3");
    ok(out, "unix_raw.py")
}

/// The JSON body of an HTTP response as text.
fn body_of(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    common::json(body.as_bytes())
}

/// Issue 39, finding 6: a PROXY header on a socket file (`--unix-proxy`) may come from
/// any local process, so the certificate name in its SSL TLV is never believed, even
/// with `--proxy-cert-names` on for the TCP balancers of `--proxy-from`; and
/// `--proxy-cert-names` with `--unix-proxy` alone is refused at start.
#[test]
fn a_proxy_header_on_a_socket_file_names_no_certificate() {
    if my_id("-u") != 0 {
        eprintln!("skipped: needs root to connect as another user (setpriv)");
        return;
    }
    let dir = sock_dir("proxy-cn");
    let sock = dir.join("rpcmux.sock");
    let auth = dir.join("users.toml");
    std::fs::write(
        &auth,
        "anonymous = [\"whoami\"]\n[users.engine]\nallow = [\"*\"]\n",
    )
    .unwrap();
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let listen = format!("unix:{}", sock.display());
    let refused = rpcmux(&[
        "serve",
        "--listen",
        &listen,
        "--unix-proxy",
        "--proxy-cert-names",
        "--auth",
        auth.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("proxy_from"),
        "{}",
        text(&refused.stderr)
    );
    let srv = Server::start(&[
        "--listen",
        &listen,
        "--unix-mode",
        "0666",
        "--unix-proxy",
        "--proxy-from",
        "192.0.2.0/24",
        "--proxy-cert-names",
        "--auth",
        auth.to_str().unwrap(),
    ]);
    for who in [Some(65534), None] {
        let reply = body_of(&unix_raw(&sock, &["whoami-behind-proxy"], who));
        assert_eq!(
            reply["result"]["peer"], "192.0.2.7:5555",
            "{who:?}: {reply}"
        );
        assert!(reply["result"]["principal"].is_null(), "{who:?}: {reply}");
        assert!(reply["result"]["identity"].is_null(), "{who:?}: {reply}");
    }
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 39, finding 10: each uid on a socket file is a source of its own for the
/// login throttle: wrong logins from uid 65534 lock out 65534, not root.
#[test]
fn each_uid_is_throttled_on_its_own() {
    if my_id("-u") != 0 {
        eprintln!("skipped: needs root to connect as another user (setpriv)");
        return;
    }
    let dir = sock_dir("throttle");
    let sock = dir.join("rpcmux.sock");
    let auth = dir.join("users.toml");
    std::fs::write(
        &auth,
        format!("[users.alice]\npassword = \"{CHEAP_WONDERLAND}\"\nallow = [\"whoami\"]\n"),
    )
    .unwrap();
    let srv = Server::start(&[
        "--listen",
        &format!("unix:{}", sock.display()),
        "--unix-mode",
        "0666",
        "--auth",
        auth.to_str().unwrap(),
    ]);
    let status = |r: &str| r.split(' ').nth(1).unwrap_or_default().to_owned();
    // Invented names: no user's own count is touched, only the source's.
    for i in 0..5 {
        let r = unix_raw(&sock, &["basic", &format!("guess{i}"), "x"], Some(65534));
        assert_eq!(status(&r), "401", "{r}");
    }
    let r = unix_raw(&sock, &["basic", "guess5", "x"], Some(65534));
    assert_eq!(status(&r), "429", "uid 65534 is throttled: {r}");
    let r = unix_raw(&sock, &["basic", "alice", "wonderland"], None);
    assert_eq!(status(&r), "200", "root is not: {r}");
    assert_eq!(body_of(&r)["result"]["principal"], "alice", "{r}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's Unix-socket block, as pasted (its socket file moved; its port is 0, a
/// free one): twice in a row it waits for its own server, calls it over the socket and
/// stops it; with its port taken it says the server did not start, rather than let
/// the calls fail silently or reach another server.
#[test]
fn the_readme_block_waits_for_its_own_server() {
    let readme = std::fs::read_to_string(common::repo().join("README.md")).unwrap();
    let start = readme
        .find("out=$(mktemp); rpcmux serve --listen 127.0.0.1:0 --listen unix:/tmp/rpcmux.sock")
        .expect("the Unix-socket block in README.md");
    let end = start + readme[start..].find("\n```").unwrap();
    let dir = sock_dir("readme");
    let sock = dir.join("rpcmux.sock");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let block = readme[start..end].replace("/tmp/rpcmux.sock", sock.to_str().unwrap());
    let bin = Path::new(env!("CARGO_BIN_EXE_rpcmux")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let paste_block = |block: &str| {
        Command::new("bash")
            .args(["-c", block])
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let paste = || paste_block(&block);
    for round in 1..=2 {
        let out = paste();
        let said = text(&out.stdout);
        assert!(
            said.contains(r#""principal":null"#),
            "round {round}: {said} {}",
            text(&out.stderr)
        );
        assert!(said.trim_end().ends_with("42"), "round {round}: {said}");
        // `kill %1` stops it: the socket file goes with the server.
        let gone = std::time::Instant::now() + Duration::from_secs(30);
        while sock.exists() {
            assert!(std::time::Instant::now() < gone, "the socket file stayed");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // On a port taken (the block's own is 0: any free one).
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let block = block.replace("127.0.0.1:0", &format!("127.0.0.1:{port}"));
    let out = paste_block(&block);
    let err = text(&out.stderr);
    assert!(
        err.contains("rpcmux serve did not start: its error is above"),
        "{err}"
    );
    assert!(err.contains("Address already in use"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
