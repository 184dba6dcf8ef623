//! `rpcmux serve`: flags override the config file, which overrides the defaults.

use super::ops;
use super::seconds::seconds;
use clap::Args;
use rpcmux::{Config, Proto, Server, TlsMode, VerbTable};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (repeatable; HOST:PORT, IPv4:PORT or [IPv6]:PORT; a name is
    /// resolved at startup and each of its addresses bound; port 0 picks a free port;
    /// unix:/PATH for a Unix-domain socket file, unix:@NAME for an abstract one).
    #[arg(long = "listen", short = 'l', value_name = "ADDR", help_heading = LISTEN)]
    listen: Vec<String>,
    /// Permission bits of the Unix socket files (octal, e.g. 0660): who may connect is
    /// who may write the file. [default: what the umask leaves]
    #[arg(long, value_name = "MODE", value_parser = unix_mode, help_heading = LISTEN)]
    unix_mode: Option<u32>,
    /// Owner of the Unix socket files (a user name or uid; needs privilege). [default:
    /// the server's user]
    #[arg(long, value_name = "USER", help_heading = LISTEN)]
    unix_owner: Option<String>,
    /// Group of the Unix socket files (a group name or gid). [default: the server's
    /// group]
    #[arg(long, value_name = "GROUP", help_heading = LISTEN)]
    unix_group: Option<String>,
    /// Accept a PROXY v1/v2 header from processes on the Unix sockets (a local balancer
    /// such as HAProxy with `send-proxy-v2`), as --proxy-from does over TCP.
    #[arg(long, help_heading = LISTEN)]
    unix_proxy: bool,
    /// TOML config file with the same settings (see docs/config.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Do not register the built-in demo verbs.
    #[arg(long)]
    no_demo: bool,
    /// Protocols to detect (repeatable): http (XML-RPC, JSON-RPC and msgpack bodies over
    /// HTTP, and WebSocket), jsonrpc-tcp, msgpack, stomp. The names of `rpcmux call
    /// --proto` are taken too: xmlrpc, jsonrpc, jsonrpc-ws and stomp-ws mean http.
    #[arg(long = "protocol", alias = "proto", value_name = "PROTO", value_parser = parse_proto, help_heading = LISTEN)]
    protocols: Vec<Proto>,
    /// Open sockets at most; more are accepted and closed at once.
    #[arg(long, help_heading = LIMITS)]
    max_connections: Option<usize>,
    /// Connections still being sniffed at most.
    #[arg(long, help_heading = LIMITS)]
    max_sniffing: Option<usize>,
    /// Seconds a connection may take to show its protocol (0: off).
    #[arg(long, value_name = "SECS", value_parser = seconds, help_heading = LIMITS)]
    sniff_timeout: Option<f64>,
    /// Seconds of silence before an idle connection is closed (0: off, never).
    #[arg(long, value_name = "SECS", value_parser = seconds, help_heading = LIMITS)]
    idle_timeout: Option<f64>,
    /// Calls in flight per connection.
    #[arg(long, help_heading = LIMITS)]
    max_in_flight: Option<usize>,
    /// HTTP body cap in bytes.
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_body: Option<usize>,
    /// Stream frame cap in bytes.
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_frame: Option<usize>,
    /// Seconds graceful shutdown waits for calls in flight (0: off, as long as they run).
    #[arg(long, value_name = "SECS", value_parser = seconds, help_heading = LIMITS)]
    shutdown_timeout: Option<f64>,
    /// Open sockets per client address at most (0: no cap).
    #[arg(long, help_heading = LIMITS)]
    max_connections_per_ip: Option<usize>,
    /// Connections per client address still sniffing or handshaking at most (0: no cap).
    #[arg(long, help_heading = LIMITS)]
    max_sniffing_per_ip: Option<usize>,
    /// JSON-RPC batch members / system.multicall calls per request at most.
    #[arg(long, help_heading = LIMITS)]
    max_batch: Option<usize>,
    /// Encoded reply cap in bytes (a bigger reply becomes an error).
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_reply: Option<usize>,
    /// Request bytes of calls in flight per connection.
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_in_flight_bytes: Option<usize>,
    /// Request bytes of calls in flight in the whole process.
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_total_in_flight_bytes: Option<usize>,
    /// Seconds an HTTP body may go without a byte arriving (0: off).
    #[arg(long, value_name = "SECS", value_parser = seconds, help_heading = LIMITS)]
    body_timeout: Option<f64>,
    /// Bytes per second an HTTP body must average after --body-timeout seconds.
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    min_body_rate: Option<usize>,
    /// Event subscriptions per connection at most.
    #[arg(long, help_heading = LIMITS)]
    max_subscriptions: Option<usize>,
    /// WebSocket sessions one HTTP/2 connection may carry at once (0: streams cap only).
    #[arg(long, help_heading = LIMITS)]
    max_sessions_per_connection: Option<usize>,
    /// Event subscriptions per connection, all its sessions together (0: no cap).
    #[arg(long, help_heading = LIMITS)]
    max_connection_subscriptions: Option<usize>,
    /// Event subscriptions per client address, all its connections together (0: no cap).
    #[arg(long, help_heading = LIMITS)]
    max_subscriptions_per_ip: Option<usize>,
    /// Bytes of replies and events queued for clients in the whole process; past it
    /// big replies become error -32006 until clients read.
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_total_output: Option<usize>,
    /// Bytes of unsent output one stream connection may hold before it stops reading
    /// and taking events [default: 4 MiB].
    #[arg(long, value_name = "BYTES", help_heading = LIMITS)]
    max_conn_output: Option<usize>,
    /// Seconds output may wait for a peer that reads nothing before it is closed (0: off).
    #[arg(long, value_name = "SECS", value_parser = seconds, help_heading = LIMITS)]
    send_timeout: Option<f64>,
    /// Calls one request may start: JSON-RPC batch members with the system.multicall
    /// calls they carry.
    #[arg(long, help_heading = LIMITS)]
    max_calls_per_request: Option<usize>,
    /// Worker threads.
    #[arg(long)]
    threads: Option<usize>,
    /// PEM certificate chain for TLS on the same port (leaf first).
    #[arg(long, value_name = "FILE", help_heading = TLS)]
    tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, value_name = "FILE", help_heading = TLS)]
    tls_key: Option<PathBuf>,
    /// PEM CA certificate(s): TLS clients must present a certificate signed by one
    /// (mutual TLS); its subject CN (or first SAN) is the identity verbs see.
    #[arg(long, value_name = "FILE", help_heading = TLS)]
    tls_client_ca: Option<PathBuf>,
    /// off, optional (TLS and plaintext on one port) or required (plaintext refused).
    #[arg(long = "tls", value_enum, value_name = "MODE", help_heading = TLS)]
    tls_mode: Option<TlsMode>,
    /// Seconds a TLS handshake may take (0: off).
    #[arg(long, value_name = "SECS", value_parser = seconds, help_heading = TLS)]
    tls_handshake_timeout: Option<f64>,
    /// Credentials file: who may call what (users, groups, allow/deny verb globs,
    /// anonymous, JWT keys; see docs/auth.md). Reloaded on SIGHUP.
    #[arg(long, value_name = "FILE", help_heading = AUTH)]
    auth: Option<PathBuf>,
    /// Take the client-certificate name a trusted PROXY v2 peer (--proxy-from) passes
    /// in its SSL TLV (HAProxy `send-proxy-v2-ssl-cn`) as the caller's principal, when
    /// the proxy verified the certificate.
    #[arg(long, help_heading = AUTH)]
    proxy_cert_names: bool,
    /// Network (CIDR) allowed to send a PROXY v1/v2 header first, i.e. your load
    /// balancers (repeatable). From anywhere else a PROXY header is refused.
    #[arg(long = "proxy-from", value_name = "CIDR", help_heading = TLS)]
    proxy_from: Vec<ipnet::IpNet>,
    /// An existing RPC server whose verbs to serve too, `[PREFIX=]URL[,URL...]`
    /// (repeatable): the scheme names its protocol (xmlrpc+http://HOST:PORT/PATH,
    /// jsonrpc+http://HOST:PORT/PATH, jsonrpc+tcp://HOST:PORT, msgpack+tcp://HOST:PORT;
    /// the +https forms need tls_ca, set in an [[upstream]] table of the config file; on
    /// a Unix-domain socket xmlrpc+unix:///PATH, jsonrpc+http+unix:///PATH[?path=/P],
    /// jsonrpc+unix:///PATH, msgpack+unix:///PATH);
    /// commas separate addresses of one server, tried in order. Its verbs are served as
    /// PREFIX.name when a prefix is given. See docs/gateway.md.
    // Parsed in `into_config`, not by clap: clap's error would echo the value, and a
    // URL may hold a password.
    #[arg(long = "upstream", value_name = "[PREFIX=]URL", help_heading = GATEWAY)]
    upstreams: Vec<String>,
    /// The verbs to serve from an upstream that cannot list its own (neither
    /// system.listMethods nor rpc.discover answers), `[PREFIX=]NAME[,NAME...]`
    /// (repeatable): PREFIX picks the upstream given with that prefix; without one, the
    /// only upstream without a prefix. The `methods` of an [[upstream]] table.
    #[arg(long = "upstream-methods", value_name = "[PREFIX=]NAME[,NAME...]", help_heading = GATEWAY)]
    upstream_methods: Vec<String>,
    /// Fan events out to every instance through this engine: redis://HOST:PORT[/DB]
    /// (see docs/fleet.md).
    #[arg(long = "events", value_name = "URL", help_heading = EVENTS)]
    events: Option<String>,
    /// The Redis stream (key) of this fleet.
    #[arg(long = "events-channel", value_name = "NAME", help_heading = EVENTS)]
    events_channel: Option<String>,
    /// Entries the fleet's stream keeps, about (XADD MAXLEN ~) [default: 100000].
    #[arg(long = "events-max-len", value_name = "N", help_heading = EVENTS)]
    events_max_len: Option<usize>,
    /// Seconds of this instance's events kept to send again to a Redis that came back
    /// empty [default: 30].
    #[arg(long = "events-resend-window", value_name = "SECS", value_parser = seconds, help_heading = EVENTS)]
    events_resend_window: Option<f64>,
    /// Bytes of events waiting for Redis (and kept to send again) at most
    /// [default: 64 MiB].
    #[arg(long = "events-queue-bytes", value_name = "BYTES", help_heading = EVENTS)]
    events_queue_bytes: Option<usize>,
    /// Recent events kept for subscribers that resume (`subscribe` with since), at
    /// most this many [default: 65536]; 0 keeps none.
    #[arg(long = "events-retain", value_name = "N", help_heading = EVENTS)]
    events_retain: Option<usize>,
    /// Bytes of recent events kept for resuming subscribers [default: 64 MiB].
    #[arg(long = "events-retain-bytes", value_name = "BYTES", help_heading = EVENTS)]
    events_retain_bytes: Option<usize>,
    /// Seconds a recent event is kept for resuming subscribers [default: 300].
    #[arg(long = "events-retain-secs", value_name = "SECS", value_parser = seconds, help_heading = EVENTS)]
    events_retain_secs: Option<f64>,
    /// Live events one subscribed session may have waiting, at most ([events] outbox);
    /// past it, or past 16 MiB ([events] outbox_bytes), it is told what it lost
    /// (events.lost) and closed [default: 4096].
    #[arg(long = "events-outbox", value_name = "N", help_heading = EVENTS)]
    events_outbox: Option<usize>,
    /// Keep the instance id and the retained events in this directory across restarts
    /// (SIGTERM and SIGKILL), so resuming clients continue with no gap [default: none:
    /// a restart is a new instance id, a reported gap].
    #[arg(long = "events-dir", value_name = "DIR", help_heading = EVENTS)]
    events_dir: Option<PathBuf>,
    /// fdatasync each event appended to --events-dir, so an OS crash loses none either.
    #[arg(long = "events-fsync", help_heading = EVENTS)]
    events_fsync: bool,
    #[command(flatten)]
    ops: OpsArgs,
    #[command(flatten)]
    web: super::web_args::WebArgs,
    /// Not a flag: the port is part of the address (`--listen 127.0.0.1:PORT`). Taken
    /// only to say so, where clap would suggest `--proto`.
    #[arg(long, hide = true, value_name = "PORT")]
    port: Option<String>,
}

// The headings of `serve --help`, in the order the flags come.
const LISTEN: &str = "Listening";
const LIMITS: &str = "Limits";
const TLS: &str = "TLS and PROXY";
const AUTH: &str = "Authentication";
const GATEWAY: &str = "Gateway";
const EVENTS: &str = "Events";

/// Metrics, access log, readiness and draining (docs/operations.md).
#[derive(Args, Debug)]
#[command(next_help_heading = "Operations")]
struct OpsArgs {
    /// Do not count or serve metrics (`GET /metrics` answers 404).
    #[arg(long)]
    no_metrics: bool,
    /// A network (CIDR) whose clients get /metrics on the RPC port (repeatable;
    /// default 127.0.0.0/8 and ::1/128; 0.0.0.0/0 and ::/0 for everyone).
    #[arg(long = "metrics-from", value_name = "CIDR")]
    metrics_from: Vec<ipnet::IpNet>,
    /// Serve /metrics on this address only, not on the RPC port.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// The level of the one line logged per call (target rpcmux::access).
    #[arg(long, value_enum, value_name = "LEVEL")]
    access_log: Option<rpcmux::AccessLevel>,
    /// Seconds past which a call is logged at warn (0: off).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    slow_call: Option<f64>,
    /// Seconds /ready answers 503 before the listeners close at shutdown (0: off).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    drain_delay: Option<f64>,
    /// Log lines as text (default) or as one JSON object each, for log shippers.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    log_format: super::log::Format,
}

/// `--protocol`: the server's names, and the client's (`call --proto`) for the same
/// protocols, so one name works on both sides.
fn parse_proto(name: &str) -> Result<Proto, String> {
    Ok(match name {
        "http" | "xmlrpc" | "jsonrpc" | "jsonrpc-ws" | "stomp-ws" => Proto::Http,
        "jsonrpc-tcp" => Proto::JsonrpcTcp,
        "msgpack" => Proto::Msgpack,
        "stomp" => Proto::Stomp,
        _ => {
            return Err(
                "expected http, jsonrpc-tcp, msgpack or stomp (or xmlrpc, jsonrpc, jsonrpc-ws, \
                 stomp-ws: all served by http)"
                    .into(),
            )
        }
    })
}

/// `[default: ...]` for every `serve` option that has one, read from `Config::default()`
/// so the help cannot drift from the code (the flags are `Option`s, so that a flag
/// overrides the config file only when given: clap cannot show these itself).
pub fn help_defaults() -> Vec<(&'static str, String)> {
    let c = Config::default();
    let (l, w, o) = (&c.limits, &c.websocket, &c.ops);
    let bytes = |n: usize| match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{n} ({} MiB)", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{n} ({} KiB)", n >> 10),
        n => n.to_string(),
    };
    let listen: Vec<String> = c.listen.iter().map(ToString::to_string).collect();
    let access = match o.access_log {
        rpcmux::AccessLevel::Off => "off",
        rpcmux::AccessLevel::Debug => "debug",
        rpcmux::AccessLevel::Info => "info",
    };
    vec![
        ("listen", listen.join(", ")),
        ("protocols", "all".into()),
        ("max_connections", l.max_connections.to_string()),
        ("max_sniffing", l.max_sniffing.to_string()),
        ("sniff_timeout", l.sniff_timeout.to_string()),
        ("idle_timeout", l.idle_timeout.to_string()),
        ("max_in_flight", l.max_in_flight.to_string()),
        ("max_body", bytes(l.max_body)),
        ("max_frame", bytes(l.max_frame)),
        ("shutdown_timeout", l.shutdown_timeout.to_string()),
        (
            "max_connections_per_ip",
            l.max_connections_per_ip.to_string(),
        ),
        ("max_sniffing_per_ip", l.max_sniffing_per_ip.to_string()),
        ("max_batch", l.max_batch.to_string()),
        ("max_reply", bytes(l.max_reply)),
        ("max_in_flight_bytes", bytes(l.max_in_flight_bytes)),
        (
            "max_total_in_flight_bytes",
            bytes(l.max_total_in_flight_bytes),
        ),
        ("body_timeout", l.body_timeout.to_string()),
        ("min_body_rate", bytes(l.min_body_rate)),
        ("max_subscriptions", l.max_subscriptions.to_string()),
        (
            "max_sessions_per_connection",
            l.max_sessions_per_connection.to_string(),
        ),
        (
            "max_connection_subscriptions",
            l.max_connection_subscriptions.to_string(),
        ),
        (
            "max_subscriptions_per_ip",
            l.max_subscriptions_per_ip.to_string(),
        ),
        ("max_total_output", bytes(l.max_total_output)),
        ("max_conn_output", bytes(l.max_conn_output)),
        ("send_timeout", l.send_timeout.to_string()),
        ("max_calls_per_request", l.max_calls_per_request.to_string()),
        ("threads", "one per core".into()),
        ("tls_mode", "optional with --tls-cert, else off".into()),
        ("tls_handshake_timeout", c.tls.handshake_timeout.to_string()),
        ("events", "none: events stay in this process".into()),
        ("events_channel", c.events.channel.clone()),
        ("metrics_listen", "the RPC port".into()),
        (
            "metrics_from",
            o.metrics_from
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("access_log", access.into()),
        ("slow_call", o.slow_call.to_string()),
        ("drain_delay", o.drain_delay.to_string()),
        ("ws_max_message", bytes(w.max_message)),
        ("ws_max_frame", bytes(w.max_frame)),
        ("ws_max_fragments", w.max_fragments.to_string()),
        ("ws_ping_interval", w.ping_interval.to_string()),
        ("ws_pong_timeout", w.pong_timeout.to_string()),
    ]
}

impl OpsArgs {
    fn apply(self, o: &mut rpcmux::OpsConfig) {
        if self.no_metrics {
            o.metrics = false;
        }
        o.metrics_listen = self.metrics_listen.or(o.metrics_listen);
        if !self.metrics_from.is_empty() {
            o.metrics_from = self.metrics_from;
        }
        o.access_log = self.access_log.unwrap_or(o.access_log);
        o.slow_call = self.slow_call.unwrap_or(o.slow_call);
        o.drain_delay = self.drain_delay.unwrap_or(o.drain_delay);
    }
}

impl ServeArgs {
    /// The settings, and whether listen addresses were given (flag or file) rather
    /// than defaulted: socket activation replaces only the default (see `ops::inherited`).
    fn into_config(self) -> Result<(Config, bool), String> {
        let mut explicit_listen = !self.listen.is_empty();
        let mut c = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let mut c =
                    Config::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                // Relative paths in the file are beside it (docs/config.md).
                c.paths_beside(path.parent().unwrap_or(std::path::Path::new(".")));
                let keys = text.parse::<toml::Table>().unwrap_or_default();
                // The library's default is no demo; the binary's is the demo, unless the
                // file says `demo = false`.
                if !keys.contains_key("demo") {
                    c.demo = true;
                }
                explicit_listen |= keys.contains_key("listen");
                c
            }
            None => Config {
                demo: true,
                ..Config::default()
            },
        };
        if !self.listen.is_empty() {
            c.listen = Config::resolve_listen(&self.listen).map_err(|e| e.to_string())?;
            // The names the server is given are names browsers may use (`[web] allowed_hosts`).
            for spec in self.listen.iter().filter(|s| !s.starts_with("unix:")) {
                if let Some((host, _)) = spec.rsplit_once(':') {
                    if host.parse::<std::net::IpAddr>().is_err() && !host.starts_with('[') {
                        c.web.allowed_hosts.push(host.to_owned());
                    }
                }
            }
        }
        c.unix.mode = self.unix_mode.or(c.unix.mode);
        c.unix.owner = self.unix_owner.or(c.unix.owner.take());
        c.unix.group = self.unix_group.or(c.unix.group.take());
        c.unix.proxy |= self.unix_proxy;
        if self.no_demo {
            c.demo = false;
        }
        if !self.protocols.is_empty() {
            c.protocols = self.protocols;
        }
        let t = &mut c.tls;
        t.cert = self.tls_cert.or(t.cert.take());
        t.key = self.tls_key.or(t.key.take());
        t.client_ca = self.tls_client_ca.or(t.client_ca.take());
        t.mode = self.tls_mode.or(t.mode);
        t.handshake_timeout = self.tls_handshake_timeout.unwrap_or(t.handshake_timeout);
        if !self.proxy_from.is_empty() {
            c.proxy_from = self.proxy_from;
        }
        c.auth.file = self.auth.or(c.auth.file.take());
        c.auth.proxy_cert_names |= self.proxy_cert_names;
        c.events.url = self.events.or(c.events.url.take());
        if let Some(ch) = self.events_channel {
            c.events.channel = ch;
        }
        c.events.max_len = self.events_max_len.unwrap_or(c.events.max_len);
        c.events.resend_window = self.events_resend_window.unwrap_or(c.events.resend_window);
        c.events.queue_bytes = self.events_queue_bytes.unwrap_or(c.events.queue_bytes);
        c.events.retain = self.events_retain.unwrap_or(c.events.retain);
        c.events.retain_bytes = self.events_retain_bytes.unwrap_or(c.events.retain_bytes);
        c.events.retain_secs = self.events_retain_secs.unwrap_or(c.events.retain_secs);
        c.events.outbox = self.events_outbox.unwrap_or(c.events.outbox);
        c.events.dir = self.events_dir.or(c.events.dir.take());
        c.events.fsync |= self.events_fsync;
        // Flags add to the file's upstreams rather than replace them: each names a server.
        for spec in &self.upstreams {
            let u = rpcmux::config::UpstreamConfig::from_flag(spec)
                .map_err(|e| format!("--upstream: {e}"))?;
            c.upstream.push(u);
        }
        for spec in &self.upstream_methods {
            rpcmux::config::add_upstream_methods(&mut c.upstream, spec)
                .map_err(|e| format!("--upstream-methods: {e}"))?;
        }
        let l = &mut c.limits;
        macro_rules! set {
            ($($f:ident),*) => {$( if let Some(v) = self.$f { l.$f = v; } )*};
        }
        set!(
            max_connections,
            max_sniffing,
            sniff_timeout,
            idle_timeout,
            max_in_flight,
            max_body,
            max_frame,
            shutdown_timeout,
            max_connections_per_ip,
            max_sniffing_per_ip,
            max_batch,
            max_reply,
            max_in_flight_bytes,
            max_total_in_flight_bytes,
            body_timeout,
            min_body_rate,
            max_subscriptions,
            max_sessions_per_connection,
            max_connection_subscriptions,
            max_subscriptions_per_ip,
            max_total_output,
            max_conn_output,
            send_timeout,
            max_calls_per_request
        );
        self.ops.apply(&mut c.ops);
        self.web.apply(&mut c);
        if c.auth.proxy_cert_names && c.proxy_from.is_empty() {
            // Names from a PROXY header are believed only from a balancer in
            // proxy_from: on a Unix socket ([unix] proxy) any local process may send one.
            return Err("proxy_cert_names (--proxy-cert-names) needs proxy_from \
                        (--proxy-from CIDR): the balancers whose certificate names are believed \
                        (never from a Unix socket, where any local process may send a PROXY header)"
                .to_owned());
        }
        Ok((c, explicit_listen))
    }
}

pub fn run(args: ServeArgs) -> ExitCode {
    super::log::init(args.ops.log_format);
    if let Some(port) = &args.port {
        eprintln!(
            "rpcmux: serve has no --port: the port is part of the address, \
             --listen 127.0.0.1:{port} (or [::1]:{port}, 0.0.0.0:{port}; repeatable)"
        );
        return ExitCode::from(2);
    }
    let threads = args.threads;
    let (mut config, explicit_listen) = match args.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rpcmux: {e}");
            return ExitCode::from(2);
        }
    };
    // A bad credentials file is a bad config, exit 2 as for the config file (the server
    // reads it again when it starts: this only judges it first).
    if let Some(path) = &config.auth.file {
        if let Err(e) = rpcmux::auth::Policy::load(path) {
            eprintln!("rpcmux: {e}");
            return ExitCode::from(2);
        }
    }
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        rt.worker_threads(n.max(1));
    }
    rt.on_thread_park(super::alloc::collect_when_parked);
    let rt = match rt.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rpcmux: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // For the hint of an address in use: the addresses asked for, when all are TCP.
    let tcp_listen: Option<Vec<std::net::SocketAddr>> = config
        .listen
        .iter()
        .map(|l| match l {
            rpcmux::config::Listen::Tcp(a) => Some(*a),
            _ => None,
        })
        .collect();
    rt.block_on(async move {
        let inherited = match ops::inherited(&mut config, explicit_listen) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("rpcmux: {e}");
                return ExitCode::FAILURE;
            }
        };
        let activated = !inherited.is_empty();
        let server = match Server::from_listeners(config, VerbTable::new(), inherited).await {
            Ok(s) => s,
            // Bad TLS material (InvalidInput) names its file; say so, not "listen".
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                eprintln!("rpcmux: {e}");
                return ExitCode::FAILURE;
            }
            // An upstream that could not be reached or described names itself.
            Err(e)
                if e.get_ref()
                    .is_some_and(|e| e.is::<rpcmux::gateway::GatewayError>()) =>
            {
                eprintln!("rpcmux: {e}");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("rpcmux: cannot listen: {e}");
                if e.kind() == std::io::ErrorKind::AddrInUse && activated {
                    eprintln!(
                        "rpcmux: systemd passed sockets in (socket activation): a `listen` \
                         address on the port of one of them (another IP, such as 0.0.0.0 \
                         beside 127.0.0.1) cannot be bound beside it; list each address once, \
                         in the socket unit's ListenStream= or in `listen`"
                    );
                } else if e.kind() == std::io::ErrorKind::AddrInUse
                    && super::addr_in_use::held_by_a_connection(tcp_listen.as_deref())
                {
                    eprintln!("rpcmux: {}", super::addr_in_use::HELD_BY_A_CONNECTION);
                } else if e.kind() == std::io::ErrorKind::AddrInUse {
                    eprintln!(
                        "rpcmux: another process (another rpcmux serve?) listens there; \
                         choose another address with --listen HOST:PORT (port 0 picks a free one)"
                    );
                }
                return ExitCode::FAILURE;
            }
        };
        if server.auth().is_none() {
            let exposed: Vec<_> = server
                .local_addrs()
                .into_iter()
                .filter(|a| !a.ip().is_loopback())
                .collect();
            if !exposed.is_empty() {
                tracing::warn!(
                    addrs = ?exposed,
                    "listening beyond loopback with no authentication: anyone who reaches these \
                     addresses may call every verb (see --auth, docs/auth.md)"
                );
            }
        }
        ops::reload_on_sighup(
            server.tls_reloader(),
            server.upstream_refresher(),
            server.auth(),
            server.listening(),
        );
        // Listening for SIGTERM/SIGINT from before "listening on" is printed: one sent as
        // soon as that line appears must start a graceful shutdown, not kill the process.
        let stop = shutdown_signal();
        {
            let mut out = std::io::stdout().lock();
            for addr in server.listening() {
                let _ = writeln!(out, "listening on {addr}");
            }
            if let Some(addr) = server.metrics_addr() {
                let _ = writeln!(out, "metrics on {addr}");
                tracing::info!("metrics on {addr}");
            }
            let _ = out.flush();
        }
        ops::ready(&server.listening());
        server.run(ops::stopping_after(stop)).await;
        tracing::info!("stopped");
        ExitCode::SUCCESS
    })
}

/// SIGTERM or SIGINT (Ctrl-C). The handlers are installed when this is called, not when
/// the future is first polled.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `--unix-mode`: octal permission bits.
fn unix_mode(text: &str) -> Result<u32, String> {
    rpcmux::config::parse_mode(text)
        .ok_or_else(|| format!("{text}: expected octal permission bits such as 0660"))
}
