//! `rpcmux bench`: a load generator for every protocol (wrk speaks only HTTP).
//!
//! Progress goes to stderr once a second; the summary to stdout, as text, `--csv`
//! (header + one row) or `--json`. Exit status: 0 when the run finished (whatever its
//! error count: scripts read it from the output), 2 when it could not run.

mod engine;

use clap::Args;
use engine::{BenchConfig, Payload};
use rpcmux::client::{ClientProto, ConnectOpts};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Protocol to speak.
    #[arg(long, alias = "protocol", value_enum, default_value = "jsonrpc-tcp")]
    proto: ClientProto,
    /// Connections to open.
    #[arg(short = 'c', long, default_value_t = 1)]
    connections: usize,
    /// Seconds to measure.
    #[arg(short = 'd', long, value_name = "SECS", default_value_t = 10.0)]
    duration: f64,
    /// Calls in flight per connection (stream protocols only; HTTP takes 1).
    #[arg(short = 'p', long, value_name = "D", default_value_t = 1)]
    pipeline: usize,
    /// What to call: `ping`, `musicentry` (echo of the MusicEntry struct), `musicentry-typed`
    /// (the same struct to the typed verb echoMusicEntry), or a JSON file
    /// (a JSON-RPC request object, or any value to echo).
    #[arg(
        long,
        value_name = "ping|musicentry|musicentry-typed|FILE",
        default_value = "ping"
    )]
    payload: String,
    /// Seconds to run before measuring.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    warmup: f64,
    /// Seconds a call may take before it counts as failed.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    #[command(flatten)]
    tls: super::tls_args::TlsArgs,
    #[command(flatten)]
    credentials: super::credential_args::CredentialArgs,
    /// Runtime worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// The server is a bare byte echo (a ceiling for comparisons): send the bytes a
    /// call of --proto would, count a call when they come back and decode to that call.
    #[arg(long)]
    echo_server: bool,
    /// Stream protocols: take an answer whose bytes equal a right answer's (its id
    /// aside; learnt from a connection's second decoded answer) as right without decoding it; decode and judge only answers that
    /// differ. A lighter load generator: a fast server is measured at its full core
    /// rather than waiting on the generator (see docs/benchmarks.md).
    #[arg(long)]
    check_bytes: bool,
    /// Print the summary as CSV (a header line and one row).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// No progress lines.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Server address, HOST:PORT (or tcp://HOST:PORT, http://HOST:PORT/PATH).
    addr: String,
}

fn secs(name: &str, s: f64, zero_ok: bool) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| zero_ok || !d.is_zero())
        .ok_or_else(|| {
            format!(
                "--{name} must be a {}number of seconds, not {s}",
                if zero_ok { "" } else { "positive " }
            )
        })
}

fn config(a: &BenchArgs) -> Result<BenchConfig, String> {
    let target = super::target::parse(&a.addr)?;
    Ok(BenchConfig {
        proto: a.proto,
        addr: target.addr,
        connections: a.connections,
        pipeline: a.pipeline,
        duration: secs("duration", a.duration, false)?,
        warmup: secs("warmup", a.warmup, true)?,
        payload: Payload::parse(&a.payload)?,
        opts: ConnectOpts {
            timeout: secs("timeout", a.timeout, false)?,
            tls: a.tls.opts(),
            credentials: a.credentials.credentials()?,
            http_path: target.path,
            ..ConnectOpts::default()
        },
        echo_server: a.echo_server,
        check_bytes: a.check_bytes,
    })
}

pub fn run(a: BenchArgs) -> ExitCode {
    let cfg = match config(&a) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = a.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = match rt.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start runtime: {e}")),
    };
    let quiet = a.quiet;
    let result = rt.block_on(engine::run(&cfg, |at, warmup, calls, errors| {
        if !quiet {
            let phase = if warmup { " (warmup)" } else { "" };
            eprintln!(
                "{:>4.0}s  {calls:>8} calls/s  {errors} errors{phase}",
                at.as_secs_f64()
            );
        }
    }));
    match result {
        Ok(report) => {
            if a.json {
                println!("{}", report.to_json());
            } else if a.csv {
                println!("{}\n{}", engine::CSV_HEADER, report.to_csv_row());
            } else {
                print!("{}", report.to_text());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("rpcmux bench: {msg}");
    ExitCode::from(2)
}
