//! The load engine behind `rpcmux bench`: N connections, each with D calls in flight,
//! for a fixed time, over any protocol the client (`rpcmux::client`) speaks.
//!
//! Every call is checked (an error reply, or a result other than the expected one,
//! counts as an error), so a server that answers fast but wrong cannot win. Each of
//! the N×D tasks keeps its own histogram and counts; they are merged at the end, so
//! the hot path shares nothing but two relaxed counters for the progress line.

mod config;
mod judge;
mod known;
mod payload;
mod pipeline;
mod report;
mod stats;

pub use config::{BenchConfig, Progress};
pub use payload::Payload;
pub use report::{Report, CSV_HEADER};
pub use stats::{Outcome, Recorder};

use bytes::BytesMut;
use judge::{describe, judge};
use rpcmux::client::{Client, ClientError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Run the bench. `on_tick` is called about once a second with the time since start,
/// whether that last second was (at least partly) warmup, and its calls and errors.
pub async fn run(
    cfg: &BenchConfig,
    mut on_tick: impl FnMut(Duration, bool, u64, u64),
) -> Result<Report, String> {
    if cfg.connections == 0 || cfg.pipeline == 0 {
        return Err("--connections and --pipeline must be at least 1".into());
    }
    if cfg.pipeline > 1 && !cfg.proto.pipelines() {
        return Err(format!(
            "{} (HTTP/1.1) carries one call at a time per connection: use --pipeline 1 and more --connections",
            cfg.proto
        ));
    }
    let progress = Arc::new(Progress::default());
    let mut tasks = Vec::with_capacity(cfg.connections * cfg.pipeline);
    let (start, measure_from, end);
    let p = &cfg.payload;
    let plan = |template, measure_from, end| {
        pipeline::Plan::new(
            cfg.proto,
            template,
            p.expect.clone(),
            cfg.pipeline,
            measure_from,
            end,
            cfg.opts.timeout,
        )
        .map(|mut plan| {
            plan.check_bytes = cfg.check_bytes;
            Arc::new(plan)
        })
    };
    if cfg.echo_server {
        if cfg.opts.tls.is_some() {
            return Err("--echo-server speaks plain TCP: no TLS".into());
        }
        let template =
            Client::request_bytes(cfg.proto, pipeline::PLACEHOLDER_ID, &p.method, &p.params)
                .map_err(|e| format!("--echo-server: {e}"))?;
        let conns = connect_raw(cfg).await?;
        (start, measure_from, end) = times(cfg);
        let plan = plan(template, measure_from, end)?;
        for tcp in conns {
            tasks.push(tokio::spawn(pipeline::connection(
                tcp,
                BytesMut::new(),
                pipeline::Answers::Echoes(echoes(cfg)?),
                plan.clone(),
                progress.clone(),
            )));
        }
    } else if cfg.proto.pipelines() {
        let conns = connect_streams(cfg).await?;
        let template = conns[0]
            .encode
            .encode(pipeline::PLACEHOLDER_ID, &p.method, &p.params)
            .map_err(|e| e.to_string())?;
        (start, measure_from, end) = times(cfg);
        let plan = plan(template, measure_from, end)?;
        for c in conns {
            tasks.push(tokio::spawn(pipeline::connection(
                c.io,
                c.input,
                pipeline::Answers::Replies(c.decode),
                plan.clone(),
                progress.clone(),
            )));
        }
    } else {
        let clients = connect_all(cfg).await?;
        (start, measure_from, end) = times(cfg);
        let payload = Arc::new(cfg.payload.clone());
        for client in &clients {
            for _ in 0..cfg.pipeline {
                tasks.push(tokio::spawn(worker(
                    client.clone(),
                    payload.clone(),
                    progress.clone(),
                    measure_from,
                    end,
                )));
            }
        }
    }
    let mut ticker =
        tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let (mut last_calls, mut last_errors, mut last_tick) = (0, 0, start);
    loop {
        let tick = tokio::select! {
            // A tick due at the very end still prints: a 1 s run shows one progress line.
            biased;
            t = ticker.tick() => t,
            _ = tokio::time::sleep_until(end) => break,
        };
        let now = Instant::now();
        let calls = progress.calls.load(Ordering::Relaxed);
        let errors = progress.errors.load(Ordering::Relaxed);
        // The second just counted is warm-up if it began before measuring did. Asking
        // whether `now` is still in warm-up would call the last warm-up second measured:
        // the tick that ends it fires a hair after the warm-up ends.
        on_tick(
            now - start,
            last_tick < measure_from,
            calls - last_calls,
            errors - last_errors,
        );
        (last_calls, last_errors, last_tick) = (calls, errors, tick);
    }
    let mut total = Recorder::new();
    for t in tasks {
        let rec = t.await.map_err(|e| format!("bench task failed: {e}"))?;
        total.merge(&rec);
    }
    Ok(Report::new(cfg, &total, cfg.duration))
}

fn echoes(cfg: &BenchConfig) -> Result<pipeline::Echoes, String> {
    pipeline::Echoes::new(cfg.proto, cfg.opts.max_reply)
        .ok_or_else(|| format!("--echo-server: {} is not echoed", cfg.proto))
}

/// Start, end of warmup, end of the run: the clock starts once every connection is open.
fn times(cfg: &BenchConfig) -> (Instant, Instant, Instant) {
    let start = Instant::now();
    (start, start + cfg.warmup, start + cfg.warmup + cfg.duration)
}

/// Plain connections (TCP or Unix-domain) for the echo-server ceiling.
async fn connect_raw(cfg: &BenchConfig) -> Result<Vec<Box<dyn rpcmux::client::Io>>, String> {
    let at = rpcmux::client::Endpoint::parse(&cfg.addr);
    let mut conns = Vec::with_capacity(cfg.connections);
    for i in 0..cfg.connections {
        let io = at
            .connect(cfg.opts.timeout)
            .await
            .map_err(|e| format!("connection {} of {}: {e}", i + 1, cfg.connections))?;
        conns.push(io);
    }
    Ok(conns)
}

async fn connect_streams(
    cfg: &BenchConfig,
) -> Result<Vec<rpcmux::client::raw::Parts<Box<dyn rpcmux::client::Io>>>, String> {
    let mut conns = Vec::with_capacity(cfg.connections);
    for i in 0..cfg.connections {
        let c = Client::connect_stream(cfg.proto, &cfg.addr, &cfg.opts)
            .await
            .map_err(|e| format!("connection {} of {}: {e}", i + 1, cfg.connections))?;
        conns.push(c);
    }
    Ok(conns)
}

async fn connect_all(cfg: &BenchConfig) -> Result<Vec<Arc<Client>>, String> {
    let mut clients = Vec::with_capacity(cfg.connections);
    for i in 0..cfg.connections {
        let c = Client::connect(cfg.proto, &cfg.addr, cfg.opts.clone())
            .await
            .map_err(|e| format!("connection {} of {}: {e}", i + 1, cfg.connections))?;
        clients.push(Arc::new(c));
    }
    Ok(clients)
}

/// One call slot: call, check, record, repeat until `end`. Calls that start before
/// `measure_from` (warmup) are not recorded. A lost connection ends the slot (the
/// failure is counted once), so a dead server cannot spin up millions of instant errors.
async fn worker(
    client: Arc<Client>,
    payload: Arc<Payload>,
    progress: Arc<Progress>,
    measure_from: Instant,
    end: Instant,
) -> Recorder {
    let mut rec = Recorder::new();
    loop {
        let t0 = Instant::now();
        if t0 >= end {
            break;
        }
        let result = client.call_ref(&payload.method, &payload.params).await;
        let latency = t0.elapsed();
        let (outcome, fatal) = match &result {
            Ok(reply) => (judge(reply, payload.expect.as_ref()), false),
            Err(ClientError::Timeout(_)) => (Outcome::Transport, false),
            Err(_) => (Outcome::Transport, true),
        };
        progress.count(outcome);
        // A lost connection is reported even in warmup: the slot it ends never recovers.
        if t0 >= measure_from || fatal {
            rec.record(latency, outcome, || describe(&result));
        }
        if fatal {
            break;
        }
    }
    rec
}
