//! Learning an upstream's verbs: XML-RPC introspection (`system.listMethods`, then
//! `system.methodHelp` and `system.methodSignature` per verb), else OpenRPC's
//! `rpc.discover`, else the `methods` list from the settings.
//!
//! Discovery calls go through [`Upstream::forward`], so they use the same pool,
//! failover and timeout as the calls that follow.

use crate::gateway::forward::{refused, Caller, Upstream};
use futures_util::stream::{self, StreamExt};
use rpcmux_value::{Params, RpcError, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Introspection calls in flight at once while describing the verbs.
const PARALLEL: usize = 8;

/// What an upstream may tell about itself: it is a server like any client, and what it
/// sends is bounded like client input. An upstream listing 1,500 methods with 1 MiB
/// help texts made rpcmux hold 1.6 GiB; one listing 10,000 took minutes to start and
/// put 194,893 series into `/metrics`; a control character in a name stopped the start.
pub(super) mod bounds {
    /// Verbs served from one upstream; the rest are skipped (logged).
    pub const MAX_METHODS: usize = 1024;
    /// Bytes of a verb's name; a longer name is skipped (logged).
    pub const MAX_NAME: usize = 128;
    /// Bytes of a verb's help kept; longer help is cut (at a character boundary).
    pub const MAX_HELP: usize = 4096;
    /// How long describing an upstream's verbs (help and signatures) may take; verbs
    /// not described by then are served without help. An upstream answering slowly or
    /// hugely delays startup by this much at most.
    pub const DESCRIBE_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);
    /// Signatures, types per signature, and bytes per type name kept; more: none kept.
    pub const MAX_SIGNATURES: usize = 16;
    pub const MAX_SIGNATURE_TYPES: usize = 32;
    pub const MAX_TYPE_NAME: usize = 32;
}

/// Why a listed name cannot be a verb's, if it cannot: empty, too long, or holding a
/// control character or white space (names go into logs, metrics labels and every
/// protocol's method field).
pub(super) fn bad_name(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("empty name".into())
    } else if name.len() > bounds::MAX_NAME {
        Some(format!(
            "a name of {} bytes (at most {})",
            name.len(),
            bounds::MAX_NAME
        ))
    } else {
        name.chars()
            .find(|c| c.is_control() || c.is_whitespace())
            .map(|c| format!("a control or space character {c:?} in its name"))
    }
}

/// Help text as served: control characters other than newline and tab replaced, cut
/// to [`bounds::MAX_HELP`] bytes.
fn clean_help(help: &str) -> String {
    let mut out = String::with_capacity(help.len().min(bounds::MAX_HELP));
    for c in help.chars() {
        let c = match c {
            '\n' | '\t' => c,
            c if c.is_control() => '\u{FFFD}',
            c => c,
        };
        if out.len() + c.len_utf8() > bounds::MAX_HELP {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

/// Keep the names that can be verbs', at most [`bounds::MAX_METHODS`]; log what is
/// skipped (once per kind, with a count).
fn usable_names<'a>(upstream: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut kept = Vec::new();
    let (mut bad, mut over) = (0usize, 0usize);
    for name in names {
        if let Some(why) = bad_name(name) {
            if bad == 0 {
                tracing::warn!(upstream, name = %name.escape_debug(), why, "upstream verb skipped (further bad names counted only)");
            }
            bad += 1;
        } else if kept.len() >= bounds::MAX_METHODS {
            over += 1;
        } else {
            kept.push(name.to_owned());
        }
    }
    if bad > 1 {
        tracing::warn!(
            upstream,
            skipped = bad,
            "upstream verbs skipped for bad names"
        );
    }
    if over > 0 {
        tracing::warn!(
            upstream,
            skipped = over,
            served = bounds::MAX_METHODS,
            "upstream lists more verbs than are served from one upstream; the rest are skipped"
        );
    }
    kept
}

/// One verb the upstream serves, as it describes it.
pub(super) struct Found {
    /// Its name on the upstream.
    pub name: String,
    pub help: String,
    /// `[[return, params...], ...]` when the upstream gives real ones.
    pub signatures: Option<Vec<Vec<String>>>,
}

/// Where the list came from, for the startup log.
pub(super) type Source = &'static str;

/// The upstream's verbs, or why there are none to serve. `strict` (a refresh while
/// serving): an upstream that could not be asked (unreachable, timed out, overloaded,
/// a bad reply) is a failure even with a `methods` list, so the verbs learned before
/// are kept rather than replaced by that list; one that answered with a fault of its
/// own has no introspection, and gets the list.
///
/// A discovery that takes longer than [`PROGRESS_EVERY`] says so in the log, once per
/// that period (`learning upstream verbs upstream=sv described=8 of=20`), so a slow
/// upstream at startup is visibly being asked rather than a silent hang; a fast one
/// logs nothing more than before.
pub(super) async fn discover(
    up: &Upstream,
    configured: &[String],
    strict: bool,
) -> Result<(Vec<Found>, Source), RpcError> {
    let progress = Progress::default();
    let work = discover_counted(up, configured, strict, &progress);
    tokio::pin!(work);
    let start = tokio::time::Instant::now();
    let mut tick = tokio::time::interval_at(start + PROGRESS_EVERY, PROGRESS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            r = &mut work => return r,
            _ = tick.tick() => progress.log(&up.name, start.elapsed()),
        }
    }
}

/// How often a slow discovery logs how far it got.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How far a discovery got: the verbs listed (0 until `system.listMethods` answered)
/// and those described so far.
#[derive(Default)]
struct Progress {
    listed: AtomicUsize,
    described: AtomicUsize,
}

impl Progress {
    fn log(&self, upstream: &str, elapsed: std::time::Duration) {
        let of = self.listed.load(Ordering::Relaxed);
        let elapsed = format!("{:.0}s", elapsed.as_secs_f64());
        if of == 0 {
            tracing::info!(
                upstream = %upstream,
                elapsed = %elapsed,
                "learning upstream verbs: waiting for its answer"
            );
        } else {
            let described = self.described.load(Ordering::Relaxed);
            tracing::info!(
                upstream = %upstream,
                described,
                of,
                elapsed = %elapsed,
                "learning upstream verbs: asking each for its help and signature"
            );
        }
    }
}

async fn discover_counted(
    up: &Upstream,
    configured: &[String],
    strict: bool,
    progress: &Progress,
) -> Result<(Vec<Found>, Source), RpcError> {
    let listed = up
        .forward("system.listMethods", Params::default(), Caller::default())
        .await;
    // Refused credentials are a setting to fix, never a reason to fall back on the
    // `methods` list.
    if let Err(e) = listed.as_ref() {
        if refused(e) {
            return Err(e.clone());
        }
    }
    if let Ok(Value::Array(names)) = &listed {
        let names = usable_names(&up.name, names.iter().filter_map(Value::as_str));
        progress.listed.store(names.len(), Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + bounds::DESCRIBE_WITHIN;
        let found = stream::iter(names)
            .map(|name| async move {
                if tokio::time::Instant::now() >= deadline {
                    return Found {
                        name,
                        help: String::new(),
                        signatures: None,
                    };
                }
                let found =
                    match tokio::time::timeout_at(deadline, describe(up, name.clone())).await {
                        Ok(found) => found,
                        Err(_) => Found {
                            name,
                            help: String::new(),
                            signatures: None,
                        },
                    };
                progress.described.fetch_add(1, Ordering::Relaxed);
                found
            })
            .buffered(PARALLEL)
            .collect::<Vec<_>>()
            .await;
        let bare = found
            .iter()
            .filter(|f| f.help.is_empty() && f.signatures.is_none())
            .count();
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(
                upstream = %up.name,
                undescribed = bare,
                within = ?bounds::DESCRIBE_WITHIN,
                "upstream too slow to describe all its verbs; the rest are served without help"
            );
        }
        return Ok((found, "system.listMethods"));
    }
    let discovered = up
        .forward("rpc.discover", Params::default(), Caller::default())
        .await;
    let methods = discovered.as_ref().ok().and_then(|d| d.get("methods"));
    if let Some(Value::Array(methods)) = methods {
        let described: Vec<Found> = methods.iter().filter_map(openrpc_method).collect();
        let names = usable_names(&up.name, described.iter().map(|f| f.name.as_str()));
        let found = described
            .into_iter()
            .filter(|f| names.contains(&f.name))
            .collect();
        return Ok((found, "rpc.discover"));
    }
    if !configured.is_empty() {
        if let Some(e) = [&listed, &discovered]
            .into_iter()
            .filter_map(|r| r.as_ref().err())
            .find(|e| !no_such_method(e))
        {
            if strict && unanswered(e) {
                return Err(e.clone());
            }
            tracing::warn!(upstream = %up.name, error = %e.message, "cannot ask the upstream for its verbs; serving the methods setting");
        }
        let found = configured
            .iter()
            .map(|name| Found {
                name: name.clone(),
                help: String::new(),
                signatures: None,
            })
            .collect();
        return Ok((found, "the methods setting"));
    }
    // Say why: the first failure that was not "no such method" (the upstream being
    // down matters more than its lacking introspection).
    let err = [listed, discovered]
        .into_iter()
        .filter_map(Result::err)
        .find(|e| !no_such_method(e))
        .unwrap_or_else(|| {
            RpcError::new(
                RpcError::METHOD_NOT_FOUND,
                "it has neither system.listMethods nor rpc.discover; list its verbs in `methods`",
            )
        });
    Err(err)
}

/// Whether `e`, the answer to an introspection probe, says the upstream has no such
/// method: -32601, or a JSON-RPC 1.0 text error (Go's `net/rpc/jsonrpc` answers "rpc:
/// can't find service system.listMethods", with no code to tell it by; any fault in
/// that shape is the upstream's own answer, so it has no introspection, not a fault).
fn no_such_method(e: &RpcError) -> bool {
    e.code == RpcError::METHOD_NOT_FOUND || e.code == crate::codes::ERR_UPSTREAM_TEXT_FAULT
}

/// Whether `e` says the upstream gave no answer of its own (the gateway's -32010..-32013).
fn unanswered(e: &RpcError) -> bool {
    use crate::codes::{ERR_UPSTREAM_BAD_REPLY, ERR_UPSTREAM_UNREACHABLE};
    (ERR_UPSTREAM_BAD_REPLY..=ERR_UPSTREAM_UNREACHABLE).contains(&e.code)
}

/// Help and signatures of one listed verb; either may be missing (a fault, or
/// Python's "signatures not supported" string): the verb is served all the same.
async fn describe(up: &Upstream, name: String) -> Found {
    let arg = || Params::Positional(vec![Value::from(name.as_str())]);
    let help = match up
        .forward("system.methodHelp", arg(), Caller::default())
        .await
    {
        Ok(Value::String(h)) => clean_help(&h),
        _ => String::new(),
    };
    // Python's SimpleXMLRPCServer answers the string "signatures not supported".
    let signatures = match up
        .forward("system.methodSignature", arg(), Caller::default())
        .await
    {
        Ok(Value::Array(sigs)) => signatures(&sigs),
        _ => None,
    };
    Found {
        name,
        help,
        signatures,
    }
}

/// `[[string...]...]` (the XML-RPC introspection spec), or one flat `[string...]`
/// (what supervisord answers); `None` when any part is something else.
fn signatures(sigs: &[Value]) -> Option<Vec<Vec<String>>> {
    let type_ok = |k: &Value| {
        k.as_str()
            .is_some_and(|t| t.len() <= bounds::MAX_TYPE_NAME && bad_name(t).is_none())
    };
    let fits = |s: &[Value]| s.len() <= bounds::MAX_SIGNATURE_TYPES && s.iter().all(type_ok);
    if sigs.len() > bounds::MAX_SIGNATURE_TYPES {
        return None;
    }
    if !sigs.is_empty() && sigs.iter().all(|s| s.as_str().is_some()) {
        if !fits(sigs) {
            return None;
        }
        return Some(vec![sigs
            .iter()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect()]);
    }
    if sigs.len() > bounds::MAX_SIGNATURES {
        return None;
    }
    sigs.iter()
        .map(|s| {
            let s = s.as_array().filter(|s| fits(s))?;
            s.iter().map(|k| k.as_str().map(str::to_owned)).collect()
        })
        .collect::<Option<Vec<Vec<String>>>>()
        .filter(|s| !s.is_empty())
}

/// A method of an OpenRPC document: its name, and its description (or summary) as help.
fn openrpc_method(m: &Value) -> Option<Found> {
    let name = m.get("name")?.as_str()?.to_owned();
    let help = clean_help(
        ["description", "summary"]
            .iter()
            .find_map(|k| m.get(k).and_then(Value::as_str))
            .unwrap_or_default(),
    );
    Some(Found {
        name,
        help,
        signatures: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    #[test]
    fn signatures_only_when_well_formed() {
        let ok = vec![Value::Array(vec!["struct".into(), "string".into()])];
        assert_eq!(
            signatures(&ok),
            Some(vec![vec!["struct".to_string(), "string".to_string()]])
        );
        let flat = [Value::from("boolean"), Value::from("string")];
        assert_eq!(
            signatures(&flat),
            Some(vec![vec!["boolean".to_string(), "string".to_string()]])
        );
        let mixed = [Value::from("int"), Value::Array(vec![])];
        assert_eq!(signatures(&mixed), None);
        assert_eq!(signatures(&[]), None);
        let m = vstruct! { "name" => "add", "summary" => "Add." };
        let f = openrpc_method(&m).unwrap();
        assert_eq!((f.name.as_str(), f.help.as_str()), ("add", "Add."));
        assert!(openrpc_method(&Value::from(3)).is_none());
    }

    #[test]
    fn what_an_upstream_says_is_bounded() {
        assert!(bad_name("supervisor.getState").is_none());
        assert!(bad_name("a\u{7}b").is_some());
        assert!(bad_name("a b").is_some());
        assert!(bad_name("").is_some());
        assert!(bad_name(&"x".repeat(bounds::MAX_NAME + 1)).is_some());
        let many: Vec<String> = (0..bounds::MAX_METHODS + 10)
            .map(|i| format!("m{i}"))
            .collect();
        let mut names: Vec<&str> = vec!["bad\nname"];
        names.extend(many.iter().map(String::as_str));
        let kept = usable_names("u", names.into_iter());
        assert_eq!(kept.len(), bounds::MAX_METHODS);
        assert_eq!(kept[0], "m0");
        let help = clean_help(&format!("a\u{1b}[31mb\n{}", "é".repeat(bounds::MAX_HELP)));
        assert!(help.starts_with("a\u{FFFD}[31mb\n"), "{help:?}");
        assert!(help.len() <= bounds::MAX_HELP + 3 && help.ends_with('…'));
        let long = vec![Value::from("x".repeat(bounds::MAX_TYPE_NAME + 1))];
        assert_eq!(signatures(&long), None);
        let wide: Vec<Value> = (0..bounds::MAX_SIGNATURE_TYPES + 1)
            .map(|_| Value::from("int"))
            .collect();
        assert_eq!(signatures(&wide), None);
    }
}
