//! `rpcmux watch`: follow a server's events, one JSON line per event on stdout
//! (`{"event_id":…,"name":…,"params":…}`), across dropped connections: it connects
//! again with backoff and resumes after the last id it printed, and prints each event
//! once (issue 40). Notes on connections go to stderr.
//!
//! A server restart never ends it (issue 46): a server with `--events-dir` resumes with
//! no gap; one without answers -32007 "restarted instance", and watch says on stderr
//! `server restarted; events between X and now are lost` (X the last id printed), then
//! follows on from the oldest event the new instance retains (`rpcmux_client::Follow`).
//!
//! Exit status: 1 when the server refuses the subscription for good (a `--since` given
//! on the command line that is older than what it retains, -32007 "too old"; no event
//! id or a bad pattern, -32602; a permission); 2 when the first connection fails or the
//! command line is wrong; 0 when stdout is closed.

use clap::Args;
use rpcmux::client::{ClientProto, Event, Follow, FollowError, Followed};
use std::io::Write;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Protocol to speak, one that carries events (XML-RPC and JSON-RPC over HTTP carry
    /// none) [default: jsonrpc-tcp, or jsonrpc-ws for a ws:// or wss:// URL].
    #[arg(long, alias = "protocol", value_enum)]
    proto: Option<EventProto>,
    /// Start after this event id (an `event_id` printed before), or "0" for every event
    /// the server still retains [default: from now on].
    #[arg(long, value_name = "ID")]
    since: Option<String>,
    /// Seconds to wait for a connection and for each reply.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// Seconds without an event after which a cheap call checks that the connection
    /// still answers.
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    keepalive: f64,
    #[command(flatten)]
    tls: super::tls_args::TlsArgs,
    #[command(flatten)]
    credentials: super::credential_args::CredentialArgs,
    /// Server address: HOST:PORT, ws://HOST:PORT/PATH (wss:// with --tls-ca), or a Unix
    /// socket (unix:/PATH).
    addr: String,
    /// Events to follow: a name, a prefix of one ending at a separator (`|virt|`), or
    /// '*' for all.
    #[arg(default_value = "*")]
    pattern: String,
}

/// The protocols that carry events: what `--proto` offers (`rpcmux call`'s `xmlrpc` and
/// `jsonrpc`, HTTP, carry none, so they are not offered, and clap refuses them naming
/// these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EventProto {
    /// JSON-RPC 2.0 over raw TCP ('jsonrpc' is taken for it, as before).
    #[value(alias = "jsonrpc")]
    JsonrpcTcp,
    /// MessagePack-RPC over raw TCP.
    Msgpack,
    /// STOMP 1.2 (every event; the pattern is applied here).
    Stomp,
    /// JSON-RPC 2.0 over WebSocket.
    JsonrpcWs,
    /// STOMP over WebSocket.
    StompWs,
}

impl From<EventProto> for ClientProto {
    fn from(p: EventProto) -> ClientProto {
        match p {
            EventProto::JsonrpcTcp => ClientProto::JsonrpcTcp,
            EventProto::Msgpack => ClientProto::Msgpack,
            EventProto::Stomp => ClientProto::Stomp,
            EventProto::JsonrpcWs => ClientProto::JsonrpcWs,
            EventProto::StompWs => ClientProto::StompWs,
        }
    }
}

pub fn run(a: WatchArgs) -> ExitCode {
    let follow = match prepare(&a) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start runtime: {e}")),
    };
    rt.block_on(watch(follow))
}

async fn watch(mut follow: Follow) -> ExitCode {
    let mut out = std::io::stdout();
    loop {
        match follow.next().await {
            Ok(Followed::Event(e)) => {
                // One line per event, written at once (a pipe's reader sees it now).
                if writeln!(out, "{}", line(&e))
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return ExitCode::SUCCESS;
                }
            }
            Ok(Followed::Subscribed { since }) => match since.as_deref() {
                Some("0") => eprintln!("rpcmux watch: subscribed, from the oldest retained"),
                Some(id) => eprintln!("rpcmux watch: subscribed, resuming after {id}"),
                None => eprintln!("rpcmux watch: subscribed"),
            },
            Ok(Followed::Gap { after, reason }) => {
                let after = after.as_deref().unwrap_or("the start");
                match reason {
                    "too old" => eprintln!(
                        "rpcmux watch: events between {after} and now are lost (older than the server retains)"
                    ),
                    _ => eprintln!(
                        "rpcmux watch: server restarted; events between {after} and now are lost"
                    ),
                }
            }
            Ok(Followed::Reconnecting { why, wait }) => eprintln!(
                "rpcmux watch: {why}; connecting again in {:.1}s",
                wait.as_secs_f64()
            ),
            Err(e @ FollowError::Refused(_)) => {
                eprintln!("rpcmux watch: {e}");
                return ExitCode::from(1);
            }
            Err(e) => return fail(&e.to_string()),
        }
    }
}

/// `{"event_id":…,"name":…,"params":…}` (`event_id` null when the server gave none).
fn line(e: &Event) -> String {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        event_id: Option<&'a str>,
        name: &'a str,
        params: &'a rpcmux::Value,
    }
    let l = Line {
        event_id: e.id.as_deref(),
        name: &e.name,
        params: &e.params,
    };
    serde_json::to_string(&l).unwrap_or_else(|err| format!("{{\"unprintable\":\"{err}\"}}"))
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("rpcmux watch: {msg}");
    ExitCode::from(2)
}

/// The follower the command line asks for.
fn prepare(a: &WatchArgs) -> Result<Follow, String> {
    // An HTTP URL names a transport without events: refused, naming the forms that work
    // (it was taken silently, as the host and port of raw TCP).
    let lower = a.addr.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(format!(
            "{}: HTTP carries no events; give HOST:PORT (raw TCP: --proto jsonrpc-tcp, msgpack or stomp), ws://HOST:PORT/PATH (WebSocket) or unix:/PATH",
            a.addr
        ));
    }
    let (target, opts) = super::target::connect(&a.addr, a.timeout, &a.tls, &a.credentials)?;
    let chosen = a.proto.map(ClientProto::from);
    let proto = match chosen.or(target.proto).unwrap_or(ClientProto::JsonrpcTcp) {
        ClientProto::Jsonrpc => ClientProto::JsonrpcTcp,
        ClientProto::Xmlrpc => {
            return Err(
                "XML-RPC carries no events: use jsonrpc-tcp, msgpack, stomp, \
                        jsonrpc-ws or stomp-ws"
                    .into(),
            )
        }
        p => p,
    };
    let keepalive = super::target::positive_secs("--keepalive", a.keepalive)?;
    Ok(
        Follow::new(proto, &target.addr, opts, &a.pattern, a.since.clone())
            .with_keepalive(keepalive),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_event() {
        let e = Event {
            name: "|t|1".into(),
            params: rpcmux::Value::Array(vec![1.into()]),
            id: Some("00000000000000ff-1".into()),
        };
        assert_eq!(
            line(&e),
            r#"{"event_id":"00000000000000ff-1","name":"|t|1","params":[1]}"#
        );
    }
}
