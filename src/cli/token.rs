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
    /// Seconds the token holds (its `exp` claim, from now).
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
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
            println!("{token}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("rpcmux: {}: {why}", args.auth.display());
            ExitCode::from(2)
        }
    }
}
