//! Real upstream servers for the gateway tests: Python's SimpleXMLRPCServer
//! (tests/python/xmlrpc_upstream.py) and supervisord, each started and killed by the
//! test, on free loopback ports or socket files; and clients of rpcmux over each
//! protocol.
#![allow(dead_code)]

use rpcmux::client::{Client, ClientProto, ConnectOpts};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on right now (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub use crate::common::temp_dir;

/// A Python server from tests/python, killed on drop.
pub struct PyUpstream {
    child: Child,
    pub port: u16,
}

impl PyUpstream {
    /// tests/python/xmlrpc_upstream.py (clients venv) on `port` (0: any free one),
    /// answering `whoami` with `tag`.
    pub fn start(port: u16, tag: &str) -> PyUpstream {
        Self::script(
            "RPCMUX_PY_CLIENTS",
            "clients",
            "xmlrpc_upstream.py",
            &[&port.to_string(), tag],
        )
    }

    /// Run tests/python/`script` with the interpreter of venv `venv` (`$var` overrides),
    /// and wait for its "listening on PORT" line.
    pub fn script(var: &str, venv: &str, script: &str, args: &[&str]) -> PyUpstream {
        let py = crate::common::python(var, venv);
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/python")
            .join(script);
        Self::run(py, path, args)
    }

    /// tests/gateway/token_upstream.py (the standard library only, so `python3`):
    /// XML-RPC that answers HTTP 401 unless the request has `Authorization: Bearer
    /// TOKEN`, and tells the `X-Rpcmux-Principal` header it got (`principal`).
    pub fn with_token(token: &str) -> PyUpstream {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/gateway/token_upstream.py");
        Self::run(PathBuf::from("python3"), path, &[token])
    }

    /// tests/gateway/slow_upstream.py (`python3`): `n` verbs `v0`.. and introspection
    /// answering after `delay` seconds per call (`mode` `slow`), or none (`bare`).
    pub fn slow(mode: &str, n: usize, delay: f64) -> PyUpstream {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/gateway/slow_upstream.py");
        Self::run(
            PathBuf::from("python3"),
            path,
            &[mode, &n.to_string(), &delay.to_string()],
        )
    }

    fn run(py: PathBuf, path: PathBuf, args: &[&str]) -> PyUpstream {
        let script = path.display().to_string();
        let mut child = Command::new(py)
            .arg(path)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {script}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{script} said {line:?}"))
            .parse()
            .unwrap();
        let up = PyUpstream { child, port };
        // Some servers print before they accept (tornado's loop starts after).
        assert!(
            wait_port(
                SocketAddr::from(([127, 0, 0, 1], port)),
                Duration::from_secs(10)
            ),
            "{script} does not accept on {port}"
        );
        up
    }

    /// `xmlrpc+http://127.0.0.1:PORT/RPC2`
    pub fn url(&self) -> String {
        format!("xmlrpc+http://127.0.0.1:{}/RPC2", self.port)
    }

    /// Kill it and wait until it is gone (its sockets closed).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PyUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// tests/gateway/unix_upstream.py (`python3`) on a Unix-domain socket, killed on drop.
pub struct SockUpstream(Child);

impl SockUpstream {
    /// `mode` `lines` (JSON-RPC, a value per line) or `http` (XML-RPC at /RPC2) on
    /// `socket` (a path, or `@NAME`: abstract), answering `tag` with `tag`.
    pub fn start(mode: &str, socket: &str, tag: &str) -> SockUpstream {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/gateway/unix_upstream.py");
        let mut child = Command::new("python3")
            .arg(path)
            .args([mode, socket, tag])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start unix_upstream.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let up = SockUpstream(child);
        // It prints once it listens.
        assert_eq!(line.trim(), format!("listening on {socket}"));
        up
    }
}

impl Drop for SockUpstream {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// supervisord (Debian's `supervisor`) with its XML-RPC interface on a free port, or on
/// a socket file, and one program, `sleeper`.
pub struct Supervisord {
    child: Child,
    /// Its port; 0 when it listens on `sock`.
    pub port: u16,
    /// Its socket file, when it listens on one.
    pub sock: Option<PathBuf>,
    pub dir: PathBuf,
}

impl Supervisord {
    pub fn start() -> Supervisord {
        Self::start_with(None)
    }

    /// With `[inet_http_server] username=... password=...` when `auth` is given: every
    /// request then needs HTTP Basic authentication, else 401.
    pub fn start_with(auth: Option<(&str, &str)>) -> Supervisord {
        let dir = temp_dir("supervisord");
        let port = free_port();
        let auth = auth
            .map(|(u, p)| format!("username={u}\npassword={p}\n"))
            .unwrap_or_default();
        let server = format!("[inet_http_server]\nport=127.0.0.1:{port}\n{auth}");
        let child = Self::launch(&dir, &server, &format!("http://127.0.0.1:{port}"));
        let s = Supervisord {
            child,
            port,
            sock: None,
            dir,
        };
        let up = wait_port(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(20),
        );
        s.listening(up)
    }

    /// On a socket file, `supervisor.sock` in its directory, mode 0700: how Debian's
    /// configuration has it (`[unix_http_server] file=/var/run/supervisor.sock`).
    pub fn start_unix() -> Supervisord {
        let dir = temp_dir("supervisord");
        let sock = dir.join("supervisor.sock");
        let server = format!("[unix_http_server]\nfile={}\nchmod=0700\n", sock.display());
        let child = Self::launch(&dir, &server, &format!("unix://{}", sock.display()));
        let up = wait_unix(&sock, Duration::from_secs(20));
        let s = Supervisord {
            child,
            port: 0,
            sock: Some(sock),
            dir,
        };
        s.listening(up)
    }

    /// Write its config file, `server` its listening section, and start it.
    fn launch(dir: &std::path::Path, server: &str, serverurl: &str) -> Child {
        let conf = dir.join("supervisord.conf");
        let d = dir.display();
        std::fs::write(
            &conf,
            format!(
                "{server}\n\
                 [supervisord]\nnodaemon=true\nlogfile={d}/supervisord.log\npidfile={d}/supervisord.pid\nchildlogdir={d}\n\n\
                 [rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n\
                 [supervisorctl]\nserverurl={serverurl}\n\n\
                 [program:sleeper]\ncommand=sleep 1000\nstartsecs=0\n"
            ),
        )
        .unwrap();
        Command::new("supervisord")
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start supervisord (apt-get install supervisor)")
    }

    /// `self`, once it accepts connections (`up`); else a panic showing its log.
    fn listening(self, up: bool) -> Supervisord {
        assert!(
            up,
            "supervisord did not listen; its log:\n{}",
            std::fs::read_to_string(self.dir.join("supervisord.log")).unwrap_or_default()
        );
        self
    }
}

impl Drop for Supervisord {
    /// SIGTERM, so supervisord stops `sleeper` before it exits.
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Poll until something accepts on `addr`.
pub fn wait_port(addr: SocketAddr, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if TcpStream::connect(addr).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Poll until something accepts on the socket file `path`.
pub fn wait_unix(path: &std::path::Path, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A client of rpcmux at `addr` speaking `proto`.
pub async fn client(proto: ClientProto, addr: SocketAddr) -> Client {
    let opts = ConnectOpts {
        timeout: Duration::from_secs(20),
        ..ConnectOpts::default()
    };
    Client::connect(proto, &addr.to_string(), opts)
        .await
        .unwrap_or_else(|e| panic!("{proto} client: {e}"))
}

/// Write `text` as a config file in a fresh directory; returns its path.
pub fn config_file(text: &str) -> PathBuf {
    let p = temp_dir("config").join("rpcmux.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Start rpcmux (no demo verbs) with a config file holding `toml`.
pub fn gateway_with_config(toml: &str) -> crate::common::Server {
    let path = config_file(toml);
    crate::common::Server::start(&[
        "--config",
        path.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--no-demo",
    ])
}
