//! `rpcmux serve`, `call` and `bench`.

mod alloc;
mod bench;
mod call;
mod log;
mod ops;
mod serve;
mod target;
mod tls_args;
mod web_args;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rpcmux",
    version,
    about = "One TCP port for XML-RPC, JSON-RPC (HTTP, TCP, STOMP) and MessagePack-RPC"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start-up and moved straight into its handler: size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(serve::ServeArgs),
    /// Call one method and print the result (any protocol).
    Call(call::CallArgs),
    /// Load-test a server (any protocol): calls/s, latency percentiles, errors.
    Bench(bench::BenchArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Call(args) => call::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
