//! `rpcmux passwd`: a password's argon2id hash for a credentials file (docs/auth.md).
//! The password is read from stdin (one line), never from the command line, where
//! other users could see it in the process list.

use clap::Args;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct PasswdArgs {}

pub fn run(_: PasswdArgs) -> ExitCode {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("password (echoed; pipe it in to avoid that): ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    if let Err(e) = stdin.lock().read_line(&mut line) {
        eprintln!("rpcmux: cannot read the password: {e}");
        return ExitCode::from(2);
    }
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    if password.is_empty() {
        eprintln!(
            "rpcmux: empty password: give one on stdin, e.g. `echo 'secret' | rpcmux passwd`"
        );
        return ExitCode::from(2);
    }
    println!("{}", rpcmux::auth::hash_password(password));
    ExitCode::SUCCESS
}
