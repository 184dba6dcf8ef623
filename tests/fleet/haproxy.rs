//! A real HAProxy (Debian's `haproxy`) in front of two rpcmux instances, speaking PROXY
//! v2 to them and health-checking `GET /ready`. A client loop of XML-RPC and JSON-RPC
//! calls runs through it while one instance gets SIGTERM: the instance drains (its
//! `/ready` answers 503 during `--drain-delay`, HAProxy takes it out of rotation, it
//! finishes what it has and exits), and not one call fails. The instances' access logs
//! show the client's own address (127.0.0.2), from the PROXY header.

use crate::common;
use crate::common::{run_py, Server};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running haproxy, killed on drop (shared with haproxy_identity.rs).
pub(crate) struct HaProxy(pub(crate) Child);

impl HaProxy {
    /// Check `cfg` (`haproxy -c`, its complaint in the panic) and run it in the
    /// foreground, its log to `stderr`.
    pub(crate) fn start(cfg: &std::path::Path, stderr: Stdio) -> HaProxy {
        let check = Command::new("haproxy")
            .args(["-c", "-f"])
            .arg(cfg)
            .output()
            .expect("haproxy (Debian package) must be installed");
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        HaProxy(
            Command::new("haproxy")
                .args(["-db", "-f"])
                .arg(cfg)
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .expect("start haproxy"),
        )
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn config(port: u16, backends: &[std::net::SocketAddr]) -> String {
    let mut c = format!(
        "global
    maxconn 1000
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    retries 3
    option redispatch
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    balance roundrobin
    option httpchk GET /ready
    http-check expect status 200
"
    );
    for (i, b) in backends.iter().enumerate() {
        c += &format!(
            "    server s{i} {b} send-proxy-v2 check check-send-proxy inter 100 fall 1 rise 2\n"
        );
    }
    c
}

/// Wait until HAProxy answers through the frontend.
fn wait_up(port: u16) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            drop(s);
            let (status, _, _) = common::http_post(
                format!("127.0.0.1:{port}").parse().unwrap(),
                None,
                br#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
            );
            if status == 200 {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("haproxy did not come up on port {port}");
}

#[test]
fn haproxy_drains_an_instance_without_a_failed_call() {
    let args = [
        "--proxy-from",
        "127.0.0.1/32",
        "--drain-delay",
        "1",
        "--access-log",
        "info",
    ];
    let a = Server::start(&args);
    let mut b = Server::start(&args);
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("rpcmux-haproxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(&cfg, config(port, &[a.addr, b.addr])).unwrap();
    let _haproxy = HaProxy::start(&cfg, Stdio::null());
    wait_up(port);

    let front = format!("127.0.0.1:{port}");
    let client = std::thread::spawn(move || run_py("haproxy_loop.py", &[&front, "4", "127.0.0.2"]));
    std::thread::sleep(Duration::from_millis(1200));
    b.sigterm();
    let out = client.join().unwrap();
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        r["failed"], 0,
        "calls failed while an instance drained: {out}"
    );
    assert!(r["ok"].as_u64().unwrap() > 100, "{out}");
    assert!(
        b.wait_exit(Duration::from_secs(15)).success(),
        "{}",
        b.log()
    );
    for (name, s) in [("a", &a), ("b", &b)] {
        let log = s.log();
        let served = log
            .lines()
            .filter(|l| l.contains("rpcmux::access") && l.contains("peer=127.0.0.2:"))
            .count();
        assert!(
            served > 10,
            "instance {name} logs the client's own address (PROXY v2): {served} lines\n{log}"
        );
    }
    assert!(b.log().contains("draining"), "{}", b.log());
}

/// docs/haproxy.cfg as pasted runs under a common default file-descriptor limit (soft
/// 1024, hard 4096): HAProxy wants about two per connection, and its `maxconn 20000`
/// asked for 40,022, so it would not start ("Cannot raise FD limit").
#[test]
fn the_sample_config_starts_under_a_default_fd_limit() {
    let (http, streams, backend) = (free_port(), free_port(), free_port());
    // Loopback only: the sample's instances and ports become unused local ones.
    let cfg = std::fs::read_to_string(common::repo().join("docs/haproxy.cfg"))
        .unwrap()
        .replace("bind :8080", &format!("bind 127.0.0.1:{http}"))
        .replace("bind :8081", &format!("bind 127.0.0.1:{streams}"))
        .replace("10.0.0.11:54321", &format!("127.0.0.1:{backend}"))
        .replace("10.0.0.12:54321", &format!("127.0.0.1:{backend}"));
    assert!(!cfg.contains("10.0.0."), "{cfg}");
    let dir = common::temp_dir("haproxy-sample");
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, cfg).unwrap();
    let mut child = Command::new("prlimit")
        .args(["--nofile=1024:4096", "haproxy", "-db", "-f"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) and haproxy must be installed");
    let end = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", http)).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("haproxy exited ({status}) with the sample config: {err}");
        }
        assert!(Instant::now() < end, "haproxy did not bind {http}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    std::fs::remove_dir_all(&dir).unwrap();
}
