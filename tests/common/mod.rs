//! Test harness: the real `rpcmux` binary on 127.0.0.1:0, raw sockets, and the real
//! Python clients (from the venvs `scripts/setup-test-env` builds).
//!
//! Every test binary (tests/<group>/main.rs) declares it once, as
//! `#[path = "../common/mod.rs"] mod common;`; its files reach it as `crate::common`
//! (`crate::common::hostile`, `::pki`, `::ws` for the helpers of some tests only).
#![allow(dead_code)]

pub mod hostile;
pub mod pki;
pub mod proxy;
pub mod ws;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `rpcmux serve`; killed on drop. Its stderr (the log) is collected.
pub struct Server {
    child: Child,
    /// The first TCP address (`0.0.0.0:0` when it listens on Unix sockets only).
    pub addr: SocketAddr,
    pub addrs: Vec<SocketAddr>,
    /// The Unix-domain sockets, as printed: `unix:/path`, `unix:@name`.
    pub unix: Vec<String>,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// `rpcmux serve --listen 127.0.0.1:0 <extra>`.
    pub fn start(extra: &[&str]) -> Server {
        let mut args = vec!["serve"];
        if !extra.iter().any(|a| *a == "--listen" || *a == "--config") {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        args.extend_from_slice(extra);
        Self::spawn(&args)
    }

    pub fn spawn(args: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rpcmux"));
        cmd.args(args);
        Self::spawn_command(cmd, args)
    }

    /// Start `cmd` (which runs `rpcmux` with `args`, possibly through a wrapper such as
    /// `prlimit` that execs it, so the child's pid is the server's).
    pub fn spawn_command(cmd: Command, args: &[&str]) -> Server {
        let want = args.iter().filter(|a| **a == "--listen").count().max(1);
        Self::spawn_listeners(cmd, want)
    }

    /// Start `cmd` and wait for `want` "listening on" lines (one `--listen` name may
    /// stand for several addresses).
    pub fn spawn_listeners(mut cmd: Command, want: usize) -> Server {
        let mut child = cmd
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rpcmux");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut addrs = Vec::new();
        let mut unix = Vec::new();
        let mut line = String::new();
        // One "listening on" line per listener; the first non-matching line or EOF ends it.
        while addrs.len() + unix.len() < want {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                panic!(
                    "rpcmux exited before listening; log:\n{}",
                    log.lock().unwrap()
                );
            }
            let addr = line
                .trim()
                .strip_prefix("listening on ")
                .unwrap_or_else(|| panic!("unexpected stdout line {line:?}"));
            if addr.starts_with("unix:") {
                unix.push(addr.to_owned());
            } else {
                addrs.push(addr.parse().expect("address"));
            }
        }
        Server {
            child,
            addr: addrs
                .first()
                .copied()
                .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0))),
            addrs,
            unix,
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn port(&self) -> String {
        self.addr.port().to_string()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Wait until the log contains `needle` (the server logs asynchronously).
    pub fn wait_log(&self, needle: &str, within: Duration) -> bool {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn sigterm(&self) {
        self.signal("-TERM");
    }

    /// SIGHUP: reload the TLS material and re-discover the upstreams.
    pub fn sighup(&self) {
        self.signal("-HUP");
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args([sig, &pid]).status().unwrap();
        assert!(ok.success());
    }

    /// Wait until `needle` is in the log `n` times; panics with the log after `within`.
    pub fn wait_count(&self, needle: &str, n: usize, within: Duration) {
        let end = Instant::now() + within;
        while self.log().matches(needle).count() < n {
            assert!(
                Instant::now() < end,
                "no {needle:?} #{n} in the log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let end = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                Instant::now() < end,
                "rpcmux did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Connect with a read timeout so a hung server fails the test instead of hanging it.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Send raw bytes, half-close, read everything until the server closes.
pub fn exchange(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut s = connect(addr);
    s.write_all(request).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// One HTTP/1.1 POST with `Connection: close`; returns (status, headers, body).
pub fn http_post(addr: SocketAddr, ctype: Option<&str>, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut req = format!(
        "POST /RPC2 HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(ct) = ctype {
        req.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    parse_http(&exchange(addr, &bytes))
}

/// Split a raw HTTP response (Content-Length framed) into status, head, body.
pub fn parse_http(raw: &[u8]) -> (u16, String, Vec<u8>) {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head[9..12].parse().expect("status code");
    (status, head, raw[split + 4..].to_vec())
}

pub fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("bad JSON {e}: {:?}", String::from_utf8_lossy(body)))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of a client venv: `$var`, else the venv `scripts/setup-test-env` builds.
pub fn python(var: &str, venv: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venvs").join(venv).join("bin/python"));
    assert!(
        p.exists(),
        "{} not found: run scripts/setup-test-env (or set {var})",
        p.display()
    );
    p
}

/// Run `tests/python/<script>` with the clients venv; panics with its output on failure.
pub fn run_py(script: &str, args: &[&str]) -> String {
    run_py_with(&python("RPCMUX_PY_CLIENTS", "clients"), script, args)
}

pub fn run_py_with(py: &PathBuf, script: &str, args: &[&str]) -> String {
    run_script(py.as_ref(), &repo().join("tests/python"), script, args)
}

/// `program dir/script args...` (a Python or Node client), run in `dir`; its stdout, or
/// a panic with its output if it failed.
pub fn run_script(
    program: &std::ffi::OsStr,
    dir: &std::path::Path,
    script: &str,
    args: &[&str],
) -> String {
    let out: Output = Command::new(program)
        .arg(dir.join(script))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.to_string_lossy()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A fresh directory of its own under the system's temp directory, for one test's files
/// (sockets, configs): named by `name`, this process and a counter.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("rpcmux-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run the `rpcmux` binary with `args` (`call`, `bench`, `serve` that fails...), `stdin`
/// written to it, and wait for it.
pub fn run_rpcmux(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rpcmux");
    let mut pipe = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).unwrap();
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// Run `tests/node/<script>` with Node (`$RPCMUX_NODE`, else `node`); its stdout, or a
/// panic with its output if it failed.
pub fn run_node(script: &str, args: &[&str]) -> String {
    let dir = repo().join("tests/node");
    assert!(
        dir.join("node_modules/@stomp/stompjs").exists(),
        "tests/node/node_modules missing: run scripts/setup-test-env"
    );
    let node = std::env::var("RPCMUX_NODE").unwrap_or_else(|_| "node".into());
    run_script(node.as_ref(), &dir, script, args)
}

/// benches/peers/jsonrpsee-echo (its `--client` mode is jsonrpsee's WebSocket client):
/// `$RPCMUX_JSONRPSEE_ECHO` (scripts/test builds it), else built here once into
/// `$PEERS_TARGET_DIR` or `target/peers`.
pub fn jsonrpsee_echo() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("RPCMUX_JSONRPSEE_ECHO") {
        return p.into();
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("PEERS_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .unwrap()
                .join("peers")
        });
    let status = std::process::Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["build", "--release", "-q", "--manifest-path"])
        .arg(root.join("benches/peers/jsonrpsee-echo/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "building benches/peers/jsonrpsee-echo failed"
    );
    target.join("release/jsonrpsee-echo")
}

/// The address-space cap (RLIMIT_AS) the hostile tests run the server under, so a
/// regression that makes it balloon fails the test (allocation failure, abort) instead
/// of exhausting the machine. A healthy server runs in far less: about 290 MiB of
/// address space idle (tokio threads and mimalloc's reservations; with a limit of 2 GiB
/// or more mimalloc reserves a 1 GiB arena up front, so this leaves about 2 GiB usable).
pub const HOSTILE_AS_LIMIT: u64 = 3 << 30;

/// Open files the server may hold under attack (the tests open up to ~1,300 sockets).
pub const HOSTILE_NOFILE: u64 = 8192;

impl Server {
    /// `rpcmux serve --listen 127.0.0.1:0 <extra>` under `prlimit --as=HOSTILE_AS_LIMIT`
    /// (prlimit execs the server, so the child's pid is the server's own).
    pub fn start_limited(extra: &[&str]) -> Server {
        Self::start_with_as_limit(HOSTILE_AS_LIMIT, extra)
    }

    pub fn start_with_as_limit(as_limit: u64, extra: &[&str]) -> Server {
        Self::start_limited_in(as_limit, extra, &[])
    }

    /// [`Server::start_with_as_limit`] with environment variables of its own.
    pub fn start_limited_in(as_limit: u64, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut args = vec!["serve"];
        if !extra.iter().any(|a| *a == "--listen" || *a == "--config") {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        args.extend_from_slice(extra);
        // RPCMUX_HOSTILE_BIN runs the hostile tests against another build (an older
        // release, say, to check that a test fails without the fix it guards).
        let bin = std::env::var_os("RPCMUX_HOSTILE_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_rpcmux").into());
        let mut cmd = Command::new("prlimit");
        cmd.arg(format!("--as={as_limit}"))
            .arg(format!("--nofile={HOSTILE_NOFILE}:{HOSTILE_NOFILE}"))
            .arg("--")
            .arg(bin)
            .args(&args)
            .envs(env.iter().copied());
        Self::spawn_command(cmd, &args)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A `kB` field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`, ...), in KiB; `None` once
    /// the process is gone.
    pub fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status.lines().find_map(|l| {
            let rest = l.strip_prefix(field)?.strip_prefix(':')?;
            rest.trim().trim_end_matches("kB").trim().parse().ok()
        })
    }

    /// Peak resident set size so far (VmHWM), in MiB; panics (with the log) when the
    /// server is gone, since a dead server is the failure to report.
    pub fn peak_rss_mib(&self) -> u64 {
        self.status_kib("VmHWM")
            .unwrap_or_else(|| panic!("server process gone; log:\n{}", self.log_tail(40)))
            / 1024
    }

    /// Current resident set size (VmRSS), in MiB.
    pub fn rss_mib(&self) -> u64 {
        self.status_kib("VmRSS")
            .unwrap_or_else(|| panic!("server process gone; log:\n{}", self.log_tail(40)))
            / 1024
    }

    /// Still running (not exited, not a zombie)?
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The exit status if the server has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `n` lines of the log.
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// The argon2id hash `rpcmux passwd` prints for `password` (read from its stdin), for
/// the credentials files of `--auth` tests.
pub fn password_hash(password: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rpcmux"))
        .arg("passwd")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .unwrap()
                .write_all(format!("{password}\n").as_bytes())?;
            c.wait_with_output()
        })
        .expect("rpcmux passwd");
    assert!(out.status.success(), "rpcmux passwd: {out:?}");
    let hash = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    hash
}

/// A Go program of tests/go (its package directory, e.g. `jsonrpc_client`), built by
/// `go build` (Debian's `golang-go`) into the target directory, offline: the standard
/// library only (GOFLAGS=-mod=mod, GOPROXY=off), its build cache in the target
/// directory too. Built once per test binary run; Go's cache makes a rebuild cheap.
pub fn go_build(package: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go");
    let out = dir.join(package);
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(format!("./{package}"))
        .current_dir(repo().join("tests/go"))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("GOCACHE", dir.join("cache"))
        .env("GOPATH", dir.join("path"))
        .status()
        .unwrap_or_else(|e| panic!("run go (Debian: apt-get install golang-go): {e}"));
    assert!(status.success(), "go build ./{package} failed");
    out
}
