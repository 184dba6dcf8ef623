//! Batches that leave as one request: consecutive members of a JSON-RPC batch (or the
//! calls of a `system.multicall`) whose verbs are forwarded to the same upstream, one
//! that can run many calls in one request (an XML-RPC server listing
//! `system.multicall`), go to it together instead of one request per member.
//!
//! The verb table knows nothing of upstreams: a verb may carry a [`Group`], naming the
//! [`crate::verbs::BatchTarget`] that can take several of its calls at once and the verb's name
//! there. [`plan`] splits a batch into runs of members for one target, and
//! [`VerbTable::dispatch_group`] runs one, each member still counted and logged as a
//! call of its own.

use crate::verbs::dispatch::shutting_down;
use crate::verbs::group::Group;
use crate::verbs::output::Output;
use crate::verbs::verb::Verb;
use crate::verbs::{CallContext, VerbTable};
use futures_util::future::BoxFuture;
use rpcmux_value::{Params, RpcError};
use std::ops::Range;
use std::sync::Arc;

impl Verb {
    /// Where several of its calls can go in one request right now, if anywhere.
    pub(crate) fn grouping(&self) -> Option<&Group> {
        self.group.as_ref().filter(|g| g.target.groups())
    }
}

/// One run of a batch: a member alone, or consecutive members for one target (their
/// verbs, in order).
pub(crate) enum Run {
    One(usize),
    Group(Range<usize>, Vec<Arc<Verb>>),
}

/// Split a batch's members (their method names; `None` for a member that is not a
/// call, such as one that failed to parse) into runs: two or more consecutive members
/// whose verbs go to the same target, which groups now, form a group of at most `max`.
/// A member `ctx`'s caller may not call is never grouped: it runs alone, and is refused.
pub(crate) fn plan(
    t: &VerbTable,
    methods: &[Option<&str>],
    max: usize,
    ctx: &CallContext,
) -> Vec<Run> {
    let grouped = |m: &Option<&str>| {
        let m = (*m)?;
        let v = t.get(m)?;
        if crate::verbs::access::refusal(ctx, m, Some(&v)).is_some() {
            return None;
        }
        let g = v.group.as_ref()?;
        g.target.groups().then_some(v)
    };
    let verbs: Vec<Option<Arc<Verb>>> = methods.iter().map(grouped).collect();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < verbs.len() {
        let Some(first) = verbs[i].as_ref().and_then(|v| v.group.as_ref()) else {
            runs.push(Run::One(i));
            i += 1;
            continue;
        };
        let mut end = i + 1;
        while end < verbs.len()
            && end - i < max.max(1)
            && verbs[end]
                .as_ref()
                .and_then(|v| v.group.as_ref())
                .is_some_and(|g| g.same_target(first))
        {
            end += 1;
        }
        if end - i == 1 {
            runs.push(Run::One(i));
        } else {
            let vs = verbs[i..end].iter().flatten().cloned().collect();
            runs.push(Run::Group(i..end, vs));
        }
        i = end;
    }
    runs
}

impl VerbTable {
    /// Run the calls of one group (from [`plan`]: verbs that share a target) as one
    /// request to that target. Each member is observed as a call of its own, and
    /// checked as one: a member the caller may not make is answered with its refusal
    /// and not sent (whoever built the group). The server's shutdown abort ends them
    /// all with -32001.
    pub(crate) fn dispatch_group(
        &self,
        calls: Vec<(Arc<Verb>, Params)>,
        ctx: CallContext,
    ) -> BoxFuture<'static, Vec<Result<Output, RpcError>>> {
        let observed: Vec<_> = calls
            .iter()
            .map(|(v, _)| {
                self.observer
                    .as_ref()
                    .map(|o| o.begin(&v.name, Some(v.observed()), &ctx))
            })
            .collect();
        let refused: Vec<Option<RpcError>> = calls
            .iter()
            .map(|(v, _)| crate::verbs::access::refusal(&ctx, &v.name, Some(v)))
            .collect();
        let target = calls
            .first()
            .and_then(|(v, _)| v.group.as_ref())
            .map(|g| g.target.clone());
        let members: Vec<_> = calls
            .into_iter()
            .zip(&refused)
            .filter(|(_, r)| r.is_none())
            .filter_map(|((v, p), _)| Some((v.group.as_ref()?.name.clone(), p)))
            .collect();
        let n = members.len();
        let fut = target
            .filter(|_| n > 0)
            .map(|t| t.call_many(members, ctx.peer));
        let abort = ctx.abort.clone();
        Box::pin(async move {
            let results = match (fut, abort) {
                (None, _) => Vec::new(),
                (Some(fut), Some(abort)) => tokio::select! {
                    biased;
                    r = fut => r,
                    _ = abort.fired() => vec![Err(shutting_down()); n],
                },
                (Some(fut), None) => fut.await,
            };
            // A target that answers short leaves the rest without a result.
            let mut sent = results.into_iter().map(|r| r.map(Output::Value));
            let results: Vec<Result<Output, RpcError>> = refused
                .into_iter()
                .map(|r| match r {
                    Some(e) => Err(e),
                    None => sent.next().unwrap_or_else(|| {
                        Err(RpcError::internal("no result for this member of the group"))
                    }),
                })
                .collect();
            for (c, r) in observed.into_iter().zip(&results) {
                if let Some(c) = c {
                    c.finish(r);
                }
            }
            results
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventHub;
    use crate::verbs::group::{BatchTarget, Group};
    use rpcmux_auth::{Auth, Policy};
    use rpcmux_value::Value;
    use std::sync::Mutex;

    /// A target that records the names it was sent.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl BatchTarget for Recorder {
        fn groups(&self) -> bool {
            true
        }
        fn call_many(
            &self,
            calls: Vec<(Arc<str>, Params)>,
            _: Option<std::net::SocketAddr>,
        ) -> BoxFuture<'static, Vec<Result<Value, RpcError>>> {
            let mut sent = self.0.lock().unwrap();
            sent.extend(calls.iter().map(|(n, _)| n.to_string()));
            let n = calls.len();
            Box::pin(async move { vec![Ok(Value::Bool(true)); n] })
        }
    }

    /// A group handed over with a member its caller may not make (as msgpack's
    /// pipelines once did): that member is refused and never reaches the target.
    #[tokio::test]
    async fn a_refused_member_of_a_group_is_not_sent() {
        let target = Arc::new(Recorder::default());
        let mut t = VerbTable::new();
        for name in ["up.echo", "up.learn"] {
            let group = Group {
                target: target.clone(),
                name: name.trim_start_matches("up.").into(),
            };
            t.verb(name)
                .group(group)
                .passthrough(|_, _| async { Ok(Value::Nil) })
                .unwrap();
        }
        let policy =
            Policy::from_toml(r#"anonymous = ["up.echo"]"#, std::path::Path::new(".")).unwrap();
        let mut ctx = CallContext::new("test", Arc::new(EventHub::default()));
        ctx.caller = Some(crate::conn::Caller::new(Arc::new(Auth::new(policy)), None));
        let calls = ["up.echo", "up.learn", "up.echo"]
            .iter()
            .map(|m| (t.get(m).unwrap(), Params::default()))
            .collect();
        let r = t.dispatch_group(calls, ctx).await;
        assert!(r[0].is_ok() && r[2].is_ok(), "{r:?}");
        assert_eq!(
            r[1].as_ref().unwrap_err().code,
            crate::codes::ERR_NOT_AUTHENTICATED
        );
        assert_eq!(*target.0.lock().unwrap(), ["echo", "echo"]);
    }
}
