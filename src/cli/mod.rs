//! `rpcmux serve`, `call`, `bench`, and the credential helpers `passwd` and `token`.

mod addr_in_use;
mod alloc;
mod bench;
mod call;
mod credential_args;
mod log;
mod no_echo;
mod ops;
mod passwd;
mod seconds;
mod serve;
mod target;
mod tls_args;
mod token;
mod watch;
mod web_args;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
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
    #[command(
        after_help = "Every SECS, flag or config file: seconds, fractions allowed (0.5); 0 = off \
        (no timeout, no delay); negative is refused.\n\n\
        Exit status: 0 after a graceful shutdown (SIGTERM, SIGINT); 1 when it \
        cannot start (an address taken, bad TLS files, an upstream down); 2 on a bad command \
        line, config file or credentials file."
    )]
    Serve(serve::ServeArgs),
    /// Call one method and print the result (any protocol).
    #[command(
        after_help = "Exit status: 0 with the result as JSON on stdout; 1 on an error \
        reply (`error CODE: MESSAGE` on stderr); 2 with no reply (cannot connect, timeout, \
        connection closed, bad reply) or a bad command line."
    )]
    Call(call::CallArgs),
    /// Follow events (any protocol that carries them): one JSON line per event, resumed
    /// after a dropped connection from the last one printed, each printed once.
    #[command(
        after_help = "Exit status: 0 when stdout is closed; 1 when the server refuses \
        the subscription for good (--since older than it retains: error -32007 \"too \
        old\", naming the oldest retained id; --since no event id or a bad pattern: \
        -32602; a permission); 2 when the first connection fails or on a bad command \
        line. After the first connection, failures are retried. A server restart never \
        ends it: with --events-dir on the server it resumes with no gap; without, it \
        prints \"server restarted; events between X and now are lost\" on stderr and \
        follows on from the oldest event the server retains."
    )]
    Watch(watch::WatchArgs),
    /// Load-test a server (any protocol): calls/s, latency percentiles, errors.
    #[command(
        after_help = "Exit status: 0 when the run finished, whatever its error count \
        (read it from the summary); 2 when it could not run."
    )]
    Bench(bench::BenchArgs),
    /// Print the argon2id hash of a password read from stdin, for a credentials file
    /// (`password = "..."`, docs/auth.md).
    #[command(after_help = "Example: echo 'correct horse' | rpcmux passwd")]
    Passwd(passwd::PasswdArgs),
    /// Print an HS256 token (JWT) that the credentials file's `[jwt]
    /// hs256_secret_file` accepts, naming a principal (docs/auth.md).
    #[command(after_help = "Example: rpcmux token --auth credentials.toml --sub alice --ttl 600")]
    Token(token::TokenArgs),
}

/// The command line with the `serve` defaults written into its help.
fn command() -> clap::Command {
    let defaults: std::collections::HashMap<_, _> = serve::help_defaults().into_iter().collect();
    // In place (`mut_arg` would move each to the end, and its heading after the others).
    Cli::command().mut_subcommand("serve", |serve| {
        serve.mut_args(|arg| {
            let Some(default) = defaults.get(arg.get_id().as_str()) else {
                return arg;
            };
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let long = arg.get_long_help().map(ToString::to_string);
            let arg = arg.help(format!("{help} [default: {default}]"));
            match long {
                Some(long) => arg.long_help(format!("{long}\n\n[default: {default}]")),
                None => arg,
            }
        })
    })
}

pub fn main() -> ExitCode {
    let cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Call(args) => call::run(args),
        Command::Watch(args) => watch::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Passwd(args) => passwd::run(args),
        Command::Token(args) => token::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options that have no default to show: a file, a network list, a server to front.
    const NO_DEFAULT: &[&str] = &[
        "config",
        "tls_cert",
        "tls_key",
        "tls_client_ca",
        "proxy_from",
        "auth",
        "upstreams",
        "upstream_methods",
        "allow_origin",
        "allow_host",
    ];

    #[test]
    fn every_serve_option_with_a_value_shows_its_default() {
        let mut cmd = command();
        cmd.build();
        let serve = cmd.find_subcommand("serve").unwrap();
        let mut missing = Vec::new();
        for arg in serve.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_positional()
                || arg.is_hide_set()
                || !arg.get_action().takes_values()
                || NO_DEFAULT.contains(&id)
            {
                continue;
            }
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let shown = !arg.get_default_values().is_empty() || help.contains("[default: ");
            if !shown {
                missing.push(id.to_string());
            }
        }
        assert!(
            missing.is_empty(),
            "serve options without a default in --help: {missing:?}"
        );
        let help = serve.clone().render_long_help().to_string();
        assert!(help.contains("[default: 10000]"), "{help}");
        assert!(help.contains("[default: 16777216 (16 MiB)]"), "{help}");
        // Grouped under headings, in this order, each flag under its own.
        let headings: Vec<&str> = help
            .lines()
            .filter(|l| l.ends_with(':') && !l.starts_with(' '))
            .collect();
        assert_eq!(
            headings,
            [
                "Options:",
                "Listening:",
                "Limits:",
                "TLS and PROXY:",
                "Authentication:",
                "Gateway:",
                "Events:",
                "Operations:",
                "WebSocket and browsers:"
            ],
            "{help}"
        );
        let under = |flag: &str| {
            let at = help.find(flag).unwrap_or_else(|| panic!("{flag}: {help}"));
            help[..at]
                .lines()
                .rev()
                .find(|l| headings.contains(l))
                .unwrap()
        };
        assert_eq!(under("--idle-timeout <SECS>"), "Limits:");
        assert_eq!(under("--tls <MODE>"), "TLS and PROXY:");
        assert_eq!(under("--access-log <LEVEL>"), "Operations:");
        assert!(!help.contains("--port"), "hidden: {help}");
        assert!(help.contains("0 = off"), "the rule for durations: {help}");
    }

    #[test]
    fn each_subcommand_help_gives_its_exit_statuses() {
        let mut cmd = command();
        for name in ["serve", "call", "watch", "bench"] {
            let help = cmd
                .find_subcommand_mut(name)
                .unwrap()
                .render_long_help()
                .to_string();
            assert!(help.contains("Exit status: 0"), "{name}: {help}");
        }
        let call = cmd
            .find_subcommand_mut("call")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(call.contains("needs --tls-key and --tls-ca"), "{call}");
    }
}
