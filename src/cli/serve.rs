//! `rpcmux serve`: flags override the config file, which overrides the defaults.

use clap::Args;
use rpcmux::config::{Config, Proto};
use rpcmux::{Server, VerbTable};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (repeatable; IPv4 or [IPv6]:port; port 0 picks a free port).
    /// Default 127.0.0.1:54321.
    #[arg(long = "listen", short = 'l', value_name = "ADDR")]
    listen: Vec<SocketAddr>,
    /// TOML config file with the same settings (see docs/config.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Do not register the built-in demo verbs.
    #[arg(long)]
    no_demo: bool,
    /// Protocols to detect (repeatable; default all).
    #[arg(long = "protocol", value_enum, value_name = "PROTO")]
    protocols: Vec<Proto>,
    /// Open sockets at most; more are accepted and closed at once.
    #[arg(long)]
    max_connections: Option<usize>,
    /// Connections still being sniffed at most.
    #[arg(long)]
    max_sniffing: Option<usize>,
    /// Seconds a connection may take to show its protocol.
    #[arg(long, value_name = "SECS")]
    sniff_timeout: Option<f64>,
    /// Seconds of silence before an idle connection is closed.
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Calls in flight per connection.
    #[arg(long)]
    max_in_flight: Option<usize>,
    /// HTTP body cap in bytes.
    #[arg(long, value_name = "BYTES")]
    max_body: Option<usize>,
    /// Stream frame cap in bytes.
    #[arg(long, value_name = "BYTES")]
    max_frame: Option<usize>,
    /// Seconds graceful shutdown waits for calls in flight.
    #[arg(long, value_name = "SECS")]
    shutdown_timeout: Option<f64>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

impl ServeArgs {
    fn into_config(self) -> Result<Config, String> {
        let mut c = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                Config::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            None => Config::default(),
        };
        if !self.listen.is_empty() {
            c.listen = self.listen;
        }
        if self.no_demo {
            c.demo = false;
        }
        if !self.protocols.is_empty() {
            c.protocols = self.protocols;
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
            shutdown_timeout
        );
        Ok(c)
    }
}

pub fn run(args: ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let threads = args.threads;
    let config = match args.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rpcmux: {e}");
            return ExitCode::from(2);
        }
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        rt.worker_threads(n.max(1));
    }
    let rt = match rt.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rpcmux: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let server = match Server::bind(config, VerbTable::new()).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rpcmux: cannot listen: {e}");
                return ExitCode::FAILURE;
            }
        };
        {
            let mut out = std::io::stdout().lock();
            for addr in server.local_addrs() {
                let _ = writeln!(out, "listening on {addr}");
            }
            let _ = out.flush();
        }
        server.run(shutdown_signal()).await;
        tracing::info!("stopped");
        ExitCode::SUCCESS
    })
}

/// SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
