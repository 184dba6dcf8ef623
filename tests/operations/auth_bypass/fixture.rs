//! The server the bypass matrix attacks: rpcmux embedded in the test (the command line
//! cannot register an alias of a verb with a side effect), with verbs that count their
//! runs, an alias of each, the demo verbs, a real XML-RPC upstream under a prefix
//! (Python's SimpleXMLRPCServer, tests/python/xmlrpc_upstream.py, whose `learn` verb
//! leaves a visible trace), and a credentials file with a `[jwt]` HS256 secret, set with
//! `Server::set_auth`.

use crate::common::{python, repo, run_py};
use rpcmux::{Config, EventHub, Server, Value, VerbTable};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Everyone's password (one argon2 hash for all users keeps the setup cheap).
pub const PASSWORD: &str = "correct horse battery";
/// The JWT secret (hex, geth's format) and another that the server does not know.
const SECRET: &str = "5ecd7e4a4d0c6f2a9be1c3a7f10d2e4b8a6c0f1e2d3c4b5a69788796a5b4c3d2";
const OTHER_SECRET: &str = "0000000000000000000000000000000000000000000000000000000000000001";

/// Who may call what. `staff` may call everything but `vault.open` and the upstream's
/// `learn` (by the names callers use: `up.learn`), and sees only `|virt|` events; the
/// aliases (`open`, `touch`) are allowed by the `*` glob *as names*, so only checking
/// an alias as its verb refuses `open`. `root` may do all (the controls). `bob0`..
/// `bob6` are staff whose passwords the matrix gets wrong, one per protocol, so the
/// per-user throttle of one cell does not reach another.
fn policy(hash: &str) -> String {
    let mut p = format!(
        r#"anonymous = ["ping"]
[users.alice]
password = "{hash}"
groups = ["staff"]
[users.root]
password = "{hash}"
allow = ["*"]
events = ["*"]
[groups.staff]
allow = ["*"]
deny = ["vault.open", "up.learn"]
events = ["|virt|*"]
[jwt]
hs256_secret_file = "jwt.hex"
leeway = 0
"#
    );
    // The test PKI's client certificate: staff, proved by TLS alone.
    p.push_str(&format!(
        "[users.{}]\ngroups = [\"staff\"]\n",
        crate::common::pki::CLIENT_CN
    ));
    for i in 0..7 {
        p.push_str(&format!(
            "[users.bob{i}]\npassword = \"{hash}\"\ngroups = [\"staff\"]\n"
        ));
    }
    p
}

/// Tokens for the `sub` alice: one valid, and bad ones by kind.
pub struct Tokens {
    pub valid: String,
    pub bad: Vec<(&'static str, String)>,
}

pub struct Fixture {
    pub addr: SocketAddr,
    pub events: Arc<EventHub>,
    /// Runs of `vault.open` (forbidden to staff) and `vault.touch` (allowed to staff).
    opened: Arc<AtomicU64>,
    touched: Arc<AtomicU64>,
    pub upstream: Upstream,
    pub tokens: Tokens,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Fixture {
    pub fn start(name: &str) -> Fixture {
        Fixture::start_with(name, None)
    }

    /// Also TLS on the port (HTTP/2 by ALPN), with `pki`'s server certificate; with
    /// `client_ca`, TLS clients must present a certificate from its CA.
    pub fn start_tls(name: &str, pki: &crate::common::pki::Pki, client_ca: bool) -> Fixture {
        let tls = rpcmux::config::TlsConfig {
            cert: Some(pki.dir().join("server.pem")),
            key: Some(pki.dir().join("server.key")),
            client_ca: client_ca.then(|| pki.dir().join("ca.pem")),
            ..Default::default()
        };
        Fixture::start_with(name, Some(tls))
    }

    fn start_with(name: &str, tls: Option<rpcmux::config::TlsConfig>) -> Fixture {
        let dir = std::env::temp_dir().join(format!("rpcmux-bypass-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("jwt.hex"), SECRET).unwrap();
        let creds = dir.join("creds.toml");
        std::fs::write(&creds, policy(&rpcmux::auth::hash_password(PASSWORD))).unwrap();
        let upstream = Upstream::start();
        let tokens = tokens();

        let opened = Arc::new(AtomicU64::new(0));
        let touched = Arc::new(AtomicU64::new(0));
        let verbs = verbs(&opened, &touched);
        let up: rpcmux::config::UpstreamConfig = toml::from_str(&format!(
            "url = \"xmlrpc+http://127.0.0.1:{}/RPC2\"\nprefix = \"up\"",
            upstream.port
        ))
        .unwrap();
        let config = Config {
            listen: vec!["127.0.0.1:0".parse().unwrap()],
            demo: true,
            upstream: vec![up],
            tls: tls.unwrap_or_default(),
            ..Config::default()
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (addr, events) = rt.block_on(async {
            let mut server = Server::bind(config, verbs).await.expect("bind");
            let auth = rpcmux::auth::Auth::from_file(&creds).expect("credentials file");
            server.set_auth(Arc::new(auth)).expect("set_auth");
            let addr = server.local_addrs()[0];
            let events = server.events();
            tokio::spawn(server.run(async move {
                let _ = stopped.await;
            }));
            (addr, events)
        });
        Fixture {
            addr,
            events,
            opened,
            touched,
            upstream,
            tokens,
            stop: Some(stop),
            rt: Some(rt),
        }
    }

    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::SeqCst)
    }

    pub fn touched(&self) -> u64 {
        self.touched.load(Ordering::SeqCst)
    }

    /// Publish an event named `name` to every subscriber allowed to see it.
    pub fn publish(&self, name: &str) {
        self.events.publish(name, rpcmux::Map::new());
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(std::time::Duration::from_secs(5));
        }
    }
}

/// `vault.open` and `vault.touch` count their runs; `open` and `touch` are their aliases.
fn verbs(opened: &Arc<AtomicU64>, touched: &Arc<AtomicU64>) -> VerbTable {
    let mut t = VerbTable::new();
    for (name, counter) in [("vault.open", opened), ("vault.touch", touched)] {
        let c = counter.clone();
        t.verb(name)
            .help("Count one run; return the count.")
            .handler(move |_, _| {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                async move { Ok(Value::Int(n as i64)) }
            })
            .unwrap();
    }
    t.alias("open", "vault.open").unwrap();
    t.alias("touch", "vault.touch").unwrap();
    t
}

/// A token for alice that holds `secs` more seconds (no leeway: `[jwt] leeway = 0`),
/// minted as [`tokens`] are.
pub fn alice_token_for(secs: i64) -> String {
    run_py("hs256_token.py", &[SECRET, "alice", &secs.to_string()])
        .trim()
        .to_owned()
}

/// Alice's tokens, minted by tests/python/hs256_token.py (the standard library's hmac,
/// not the server's JWT crate); the forged ones made here by hand.
fn tokens() -> Tokens {
    let mint = |secret: &str, sub: &str, offset: i64| {
        run_py("hs256_token.py", &[secret, sub, &offset.to_string()])
            .trim()
            .to_owned()
    };
    let valid = mint(SECRET, "alice", 600);
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    };
    let claims = b64(r#"{"sub":"root","exp":4102444800}"#);
    let none = format!("{}.{claims}.", b64(r#"{"alg":"none","typ":"JWT"}"#));
    let parts: Vec<&str> = valid.split('.').collect();
    let resigned = format!("{}.{claims}.{}", parts[0], parts[2]);
    Tokens {
        bad: vec![
            ("alg none", none),
            ("signed with another key", mint(OTHER_SECRET, "alice", 600)),
            ("claims swapped under a valid signature", resigned),
            ("expired", mint(SECRET, "alice", -3600)),
            ("garbage", "eyJub3QiOiJhIHRva2VuIn0.garbage.garbage".into()),
        ],
        valid,
    }
}

/// tests/python/xmlrpc_upstream.py on a free port, killed on drop.
pub struct Upstream {
    child: Child,
    pub port: u16,
}

impl Upstream {
    fn start() -> Upstream {
        let mut child = Command::new(python("RPCMUX_PY_CLIENTS", "clients"))
            .arg(repo().join("tests/python/xmlrpc_upstream.py"))
            .args(["0", "bypass"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start xmlrpc_upstream.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("xmlrpc_upstream.py said {line:?}"))
            .parse()
            .unwrap();
        Upstream { child, port }
    }

    /// The verbs the upstream serves now, asked directly (not through rpcmux): `learn`
    /// adds one, so a forwarded `learn` that ran shows here.
    pub fn methods(&self) -> Vec<String> {
        use crate::common::hostile::{post, MIB, XML};
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let body = crate::common::hostile::xmlrpc_call("system.listMethods", "");
        let r = post(addr, &[XML], &body, MIB).expect("upstream system.listMethods");
        match rpcmux_xmlrpc::parse_response(&r.body, &Default::default()) {
            Ok(Ok(Value::Array(a))) => a
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            other => panic!("upstream system.listMethods answered {other:?}"),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
