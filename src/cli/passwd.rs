//! `rpcmux passwd`: a password's argon2id hash for a credentials file (docs/auth.md).
//! The password is read from stdin, never from the command line, where other users
//! could see it in the process list: on a terminal twice, not echoed (a typo would
//! otherwise lock its user out unseen); from a pipe, one line.

use crate::cli::no_echo::{read_line_hidden, trim_line_end};
use clap::Args;
use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct PasswdArgs {}

pub fn run(_: PasswdArgs) -> ExitCode {
    let password = match read_password() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("rpcmux: {why}");
            return ExitCode::from(2);
        }
    };
    println!("{}", rpcmux::auth::hash_password(&password));
    ExitCode::SUCCESS
}

/// The password: typed twice on a terminal, else the first line of stdin.
fn read_password() -> Result<String, String> {
    let unreadable = |e: std::io::Error| format!("cannot read the password: {e}");
    let password = if std::io::stdin().is_terminal() {
        let first = prompt("password: ").map_err(unreadable)?;
        let again = prompt("password again: ").map_err(unreadable)?;
        if first != again {
            return Err("the two passwords differ: nothing printed".to_owned());
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(unreadable)?;
        trim_line_end(&line).to_owned()
    };
    if password.is_empty() {
        return Err(
            "empty password: type one, or give one on stdin, e.g. `echo 'secret' | rpcmux passwd`"
                .to_owned(),
        );
    }
    Ok(password)
}

fn prompt(what: &str) -> std::io::Result<String> {
    read_line_hidden(what)
}
