//! `rpcmux serve` (and, later, `call` and `bench`).

mod serve;

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

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(serve::ServeArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
    }
}
