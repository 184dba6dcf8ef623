//! A `redis-server` for fleet schedules (Debian's package, started on a free port), and
//! its fault: SIGKILL, then started again on the same port, with its stream (an
//! append-only file written before each command is answered) or empty.

use crate::schedule::Restarter;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Redis {
    port: u16,
    /// The append-only file's directory, when it keeps its stream.
    dir: Option<PathBuf>,
    child: Mutex<Option<Child>>,
}

impl Redis {
    pub fn start(dir: Option<PathBuf>) -> Redis {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = Redis {
            port,
            dir,
            child: Mutex::new(None),
        };
        *r.child.lock().unwrap() = Some(r.spawn());
        r
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn spawn(&self) -> Child {
        let mut cmd = Command::new("redis-server");
        cmd.args([
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ]);
        match &self.dir {
            Some(d) => cmd
                .args(["--appendonly", "yes", "--appendfsync", "always", "--dir"])
                .arg(d),
            None => cmd.args(["--appendonly", "no"]),
        };
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server (Debian package redis-server; .ci/run installs it)");
        let until = Instant::now() + Duration::from_secs(10);
        while !self.pong() {
            assert!(Instant::now() < until, "redis-server did not answer PING");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    fn pong(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 16];
        s.write_all(b"PING\r\n").is_ok()
            && s.read(&mut buf)
                .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
    }
}

impl Restarter for Redis {
    /// SIGKILL Redis and start it again (the schedule's `restart` says whether it keeps
    /// its stream: the directory given at start).
    fn restart(&self, _kill: bool) {
        let mut child = self.child.lock().unwrap();
        if let Some(mut c) = child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        *child = Some(self.spawn());
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Wait until `srv` is connected to Redis (its `/metrics` says so).
pub fn wait_joined(srv: &crate::common::Server) {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let up = TcpStream::connect(srv.addr).ok().and_then(|mut s| {
            s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
            let mut text = String::new();
            s.read_to_string(&mut text).ok()?;
            Some(
                text.lines()
                    .any(|l| l.trim() == "rpcmux_events_backend_up 1"),
            )
        });
        if up == Some(true) {
            return;
        }
        assert!(
            Instant::now() < until,
            "instance not connected to Redis; log:\n{}",
            srv.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
