//! The built-in demo verbs a newcomer tries first (`--no-demo` turns them off):
//! `ping`, `echo`, `sleep`, `whoami` (dynamic verbs), a small VDSM-like host API kept in
//! memory (`Host.getVMList`, `VM.create`, `VM.getStats`, `VM.destroy`: typed verbs, the
//! example embedders copy), `echoMusicEntry` (the benchmark's typed echo), and
//! `Host.publishEvent` (any event, for tests and the fan-out benchmark).

mod host;
mod music;
mod publish;

use crate::verbs::{RegisterError, VerbTable};
use rpcmux_value::{vstruct, RpcError, Value};
use std::time::Duration;

pub use host::{ERR_NO_SUCH_VM, ERR_VM_EXISTS};
/// `sleep` refuses anything longer, so a demo call cannot pin a connection for hours.
pub const MAX_SLEEP_MS: i64 = 60_000;

/// Register the demo verbs into `t`.
pub fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("ping")
        .returns("boolean")
        .help("Answer true: a liveness check.")
        .handler(|_, _| async { Ok(Value::Bool(true)) })?;
    t.verb("echo")
        .typed_param("value", "any", false)
        .returns("any")
        .help("Return value unchanged, whatever its type.")
        .handler(|mut a, _| async move { Ok(a.take_value(0)) })?;
    t.verb("whoami")
        .returns("struct")
        .help("Describe the caller as the server sees it: peer (the client address, from a trusted PROXY header when there is one; over a Unix socket the process's unix(uid=..,gid=..,pid=..)), identity (the verified TLS client certificate's subject CN or first SAN, or nil), principal (who --auth says is calling, or nil), protocol.")
        .handler(|_, ctx| async move {
            Ok(vstruct! {
                "peer" => ctx.client().map(|p| p.to_string()),
                "identity" => ctx.peer_identity.as_deref(),
                // Who --auth says, as the help says: without it, nil (the certificate's
                // name is `identity`, which `CallContext::principal` falls back to).
                "principal" => ctx.caller.is_some().then(|| ctx.principal()).flatten().as_deref(),
                "protocol" => ctx.protocol,
            })
        })?;
    t.verb("sleep")
        .typed_param("ms", "int", false)
        .returns("int")
        .help("Sleep ms milliseconds (at most 60000), then return ms.")
        .handler(|mut a, _| async move {
            let ms: i64 = a.take(0)?;
            if !(0..=MAX_SLEEP_MS).contains(&ms) {
                return Err(RpcError::invalid_params(format!(
                    "ms must be between 0 and {MAX_SLEEP_MS}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            Ok(Value::Int(ms))
        })?;
    host::register(t)?;
    music::register(t)?;
    publish::register(t)?;
    Ok(())
}
