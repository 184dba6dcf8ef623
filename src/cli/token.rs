//! `rpcmux token`: an HS256 token that a credentials file's `[jwt]` accepts, for a
//! principal, so a deployment with a shared secret (geth's `jwt.hex`) needs no other
//! tool to issue one. Tokens for a public key come from whoever holds its private key.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct TokenArgs {
    /// The credentials file whose `[jwt] hs256_secret_file` signs the token (its
    /// `audience` and `issuer` go into it too).
    #[arg(long, value_name = "FILE")]
    auth: PathBuf,
    /// The principal the token names (its `sub` claim).
    #[arg(long, value_name = "NAME")]
    sub: String,
    /// Seconds the token holds (its `exp` claim, from now); at least 1 (a token that
    /// never holds is a mistake).
    #[arg(long, value_name = "SECS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..))]
    ttl: u64,
}

pub fn run(args: TokenArgs) -> ExitCode {
    let policy = match rpcmux::auth::Policy::load(&args.auth) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rpcmux: {e}");
            return ExitCode::from(2);
        }
    };
    match policy.mint_token(&args.sub, Duration::from_secs(args.ttl)) {
        Ok(token) => {
            if !policy.has_user(&args.sub) {
                // Valid all the same (a name with only the anonymous permissions), but
                // most likely a typo.
                eprintln!(
                    "rpcmux: warning: {}: no [users.{:?}]: the token's principal may call only what anonymous may",
                    args.auth.display(),
                    args.sub
                );
            }
            println!("{token}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("rpcmux: {}: {why}", args.auth.display());
            ExitCode::from(2)
        }
    }
}
