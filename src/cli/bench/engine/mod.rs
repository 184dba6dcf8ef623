//! The load engine behind `rpcmux bench`: N connections, each with D calls in flight,
//! for a fixed time, over any protocol the client (`rpcmux::client`) speaks.
//!
//! Every call is checked (an error reply, or a result other than the expected one,
//! counts as an error), so a server that answers fast but wrong cannot win. Each of
//! the N×D tasks keeps its own histogram and counts; they are merged at the end, so
//! the hot path shares nothing but two relaxed counters for the progress line.

mod known;
mod payload;
mod pipeline;
mod report;
mod stats;

pub use payload::Payload;
pub use report::{Report, CSV_HEADER};
pub use stats::{Outcome, Recorder};

use bytes::BytesMut;
use rpcmux::client::{Client, ClientError, ClientProto, ConnectOpts, Reply};
use rpcmux_value::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub proto: ClientProto,
    pub addr: String,
    pub connections: usize,
    /// Calls in flight per connection (must be 1 for HTTP protocols).
    pub pipeline: usize,
    /// Measured time.
    pub duration: Duration,
    /// Time run before measuring starts (connections warm, caches filled).
    pub warmup: Duration,
    pub payload: Payload,
    pub opts: ConnectOpts,
    /// The server is a bare byte echo (a ceiling, not an RPC server): send the bytes a
    /// call of `proto` would, and count a call done when they come back and decode to that call.
    pub echo_server: bool,
    /// Stream protocols: an answer whose bytes equal a right answer's (its id aside,
    /// learnt from a connection's second decoded answer) is right without being decoded; only answers that differ are decoded and
    /// judged. A lighter load generator, so a fast server is measured at its full core.
    pub check_bytes: bool,
}

/// Live totals, for the progress line.
#[derive(Default)]
pub struct Progress {
    pub calls: AtomicU64,
    pub errors: AtomicU64,
}

impl Progress {
    /// One more call ended this way.
    fn count(&self, outcome: Outcome) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if outcome != Outcome::Ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

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

async fn connect_raw(cfg: &BenchConfig) -> Result<Vec<tokio::net::TcpStream>, String> {
    let mut conns = Vec::with_capacity(cfg.connections);
    for i in 0..cfg.connections {
        let tcp = tokio::net::TcpStream::connect(&cfg.addr)
            .await
            .and_then(|t| t.set_nodelay(true).map(|_| t))
            .map_err(|e| format!("connection {} of {}: {e}", i + 1, cfg.connections))?;
        conns.push(tcp);
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

/// `a == b`, cheaply in the usual case. `Value`'s `==` compares structs as maps (a
/// hash lookup per member, whatever the order); an echo normally keeps member order,
/// so compare in order first and fall back to `==` only when that fails (a server
/// that reorders members is still right). On the load generator's hot path.
fn same(a: &Value, b: &Value) -> bool {
    in_order(a, b) || a == b
}

fn in_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| eq_bytes(ka, kb) && in_order(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| in_order(va, vb))
        }
        (Value::String(x), Value::String(y)) => eq_bytes(x, y),
        _ => a == b,
    }
}

/// Byte equality, 8 bytes at a time, inline. The strings of a payload are short, and
/// a `memcmp` call per string showed up as the load generator's largest single cost.
fn eq_bytes(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (wa, wb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ta, tb) = (wa.remainder(), wb.remainder());
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or_default());
    wa.zip(wb).all(|(x, y)| word(x) == word(y)) && ta.iter().zip(tb).all(|(x, y)| x == y)
}

/// How an answered call counts: an error reply, a result other than `expect` (when
/// given), or right.
fn judge(reply: &Reply, expect: Option<&Value>) -> Outcome {
    match reply {
        Ok(v) if expect.is_some_and(|want| !same(v, want)) => Outcome::WrongResult,
        Ok(_) => Outcome::Ok,
        Err(_) => Outcome::ErrorReply,
    }
}

fn describe(r: &Result<Reply, ClientError>) -> String {
    match r {
        Ok(reply) => describe_reply(reply),
        Err(e) => e.to_string(),
    }
}

/// What was wrong with an answered call, for the report's first-error line.
fn describe_reply(reply: &Reply) -> String {
    match reply {
        Ok(v) => format!(
            "wrong result: {}",
            serde_json::to_string(v)
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect::<String>()
        ),
        Err(e) => format!("error reply {}: {}", e.code, e.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    #[test]
    fn same_ignores_member_order_only_as_a_fallback() {
        let a = vstruct! { "x" => 1, "y" => vec![Value::from("s")] };
        let b = vstruct! { "y" => vec![Value::from("s")], "x" => 1 };
        assert!(in_order(&a, &a.clone()));
        assert!(!in_order(&a, &b));
        assert!(same(&a, &b));
        assert!(!same(
            &a,
            &vstruct! { "x" => 1, "y" => vec![Value::from("t")] }
        ));
        assert!(!same(&Value::Int(1), &Value::Double(1.0)));
        for (x, y) in [
            ("", ""),
            ("abcdefgh", "abcdefgh"),
            ("abcdefghij", "abcdefghij"),
        ] {
            assert!(eq_bytes(x, y));
        }
        for (x, y) in [
            ("a", ""),
            ("abcdefgh", "abcdefgi"),
            ("abcdefghij", "abcdefghik"),
            ("xbcdefghij", "abcdefghij"),
        ] {
            assert!(!eq_bytes(x, y), "{x} {y}");
        }
    }
}
