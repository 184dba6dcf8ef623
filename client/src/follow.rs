//! Following events across reconnects: [`Follow`] subscribes (resumable), hands on each
//! event once, and when the connection drops (or the server says events were lost) it
//! connects again with backoff and resubscribes with `since` = the last id it handed
//! on. The server may send an event twice across a resume (at-least-once on the wire);
//! `Follow` drops what it has handed on already, by id, so each reaches the caller
//! once. What `rpcmux watch` is made of.
//!
//! A server restart never ends following. A server that keeps its events across a
//! restart (`--events-dir`) keeps its instance id and window, so the resume simply
//! continues with no gap. One that does not answers the old `since` with -32007
//! "restarted instance" (or "unknown instance": another instance behind the address):
//! the events between the last id handed on and the restart are gone, and no retry can
//! bring them back. `Follow` then says so ([`Followed::Gap`]) and subscribes again with
//! `since = "0"`, not from now on: what the new instance published since it started is
//! still in its window and comes too (each once), so the gap is only what died with the
//! old process. A -32007 "too old" on a reconnect (away longer than the window) is a
//! gap the same way; on the first subscription, with a `since` the caller gave, it is a
//! refusal (the caller asked for something the server does not have).

use crate::client::Events;
use crate::{pattern_matches, Client, ClientError, ClientProto, ConnectOpts, Event};
use rpcmux_value::{Params, RpcError, Value};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// The first wait before connecting again; it doubles per failed attempt up to
/// [`BACKOFF_MAX`], and starts over once subscribed.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What [`Follow::next`] has to tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Followed {
    /// An event, each once, in the order the server sent them.
    Event(Event),
    /// Subscribed (again), resuming after `since` when there is one.
    Subscribed {
        /// The id it resumed after (`None`: from now on).
        since: Option<String>,
    },
    /// The server cannot resume after `after` (the last id handed on, or the `since`
    /// given): it restarted without keeping its events (`reason` "restarted instance"),
    /// is an instance that never had them ("unknown instance"), or they are older than
    /// it retains ("too old", on a reconnect). The events between `after` and what the
    /// server still retains are lost; following goes on from the oldest it retains
    /// (`since = "0"`), which the next call reports as [`Followed::Subscribed`].
    Gap {
        /// The last id handed on before the gap.
        after: Option<String>,
        /// Which case of -32007: "restarted instance", "unknown instance" or "too old".
        reason: &'static str,
    },
    /// The connection is over (why); the next call connects again after `wait`.
    Reconnecting {
        /// What ended it: a closed connection, or the server's events-lost notice.
        why: String,
        /// How long the next call waits before connecting.
        wait: Duration,
    },
}

/// Why following stopped.
#[derive(Debug)]
pub enum FollowError {
    /// The server refused the subscription: -32007 "too old" for a `since` given to
    /// [`Follow::new`] that is older than what it retains (the message names the oldest
    /// retained id), -32602 for a bad `since` or pattern, or a permission. Connecting
    /// again would be refused again. (A restart is never a refusal: [`Followed::Gap`].)
    Refused(RpcError),
    /// The first connection failed (after that, failures are retried).
    Client(ClientError),
}

impl std::fmt::Display for FollowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FollowError::Refused(e) => {
                write!(f, "subscribe refused: error {}: {}", e.code, e.message)
            }
            FollowError::Client(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FollowError {}

struct Conn {
    client: Client,
    events: Events,
}

/// Follows the events matching a pattern on one server, across reconnects.
///
/// ```no_run
/// use rpcmux_client::{ClientProto, ConnectOpts, Follow, Followed};
/// # async fn run() -> Result<(), rpcmux_client::FollowError> {
/// let mut f = Follow::new(ClientProto::JsonrpcTcp, "127.0.0.1:54321", ConnectOpts::default(), "|virt|", None);
/// loop {
///     if let Followed::Event(e) = f.next().await? {
///         println!("{} {:?} {:?}", e.name, e.id, e.params);
///     }
/// }
/// # }
/// ```
pub struct Follow {
    proto: ClientProto,
    addr: String,
    opts: ConnectOpts,
    pattern: String,
    /// The last id handed on: where a resume starts.
    since: Option<String>,
    /// The highest sequence number handed on, per publishing instance (ids are ordered
    /// per instance, so anything at or below it was handed on already).
    seen: HashMap<u64, u64>,
    conn: Option<Conn>,
    /// Events read off the connection while waiting for a reply.
    queue: VecDeque<Event>,
    wait: Option<Duration>,
    backoff: Duration,
    ever_subscribed: bool,
    keepalive: Duration,
    /// When the next keepalive call goes out.
    next_ping: Instant,
    /// What the next call reports before reading on (the subscription after a gap).
    pending: Option<Followed>,
}

impl Follow {
    /// Follow the events matching `pattern` at `addr` over `proto` (a stream protocol),
    /// from `since` (an event id, or `"0"` for all the server retains) or from now on.
    /// Nothing happens until [`Follow::next`].
    pub fn new(
        proto: ClientProto,
        addr: &str,
        opts: ConnectOpts,
        pattern: &str,
        since: Option<String>,
    ) -> Follow {
        Follow {
            proto,
            addr: addr.to_owned(),
            opts,
            pattern: pattern.to_owned(),
            since,
            seen: HashMap::new(),
            conn: None,
            queue: VecDeque::new(),
            wait: None,
            backoff: BACKOFF_MIN,
            ever_subscribed: false,
            keepalive: Duration::from_secs(20),
            next_ping: Instant::now(),
            pending: None,
        }
    }

    /// Every this long, make a cheap call, to learn that the connection still works (a
    /// dead peer) and to keep it from looking idle (a server's idle timeout, WebSocket
    /// pings of a silent peer, which the client does not answer); default 20 s.
    pub fn with_keepalive(mut self, every: Duration) -> Follow {
        self.keepalive = every;
        self
    }

    /// The id of the last event handed on (or the `since` given, before any).
    pub fn last_id(&self) -> Option<&str> {
        self.since.as_deref()
    }

    /// The next thing to tell: an event, a (re)subscription, or a lost connection.
    /// `Err` only when the first connection fails or the server refuses to subscribe.
    pub async fn next(&mut self) -> Result<Followed, FollowError> {
        if let Some(told) = self.pending.take() {
            return Ok(told);
        }
        loop {
            if self.conn.is_none() {
                if let Some(wait) = self.wait.take() {
                    tokio::time::sleep(wait).await;
                }
                return match self.open().await {
                    Ok(gap) => {
                        self.backoff = BACKOFF_MIN;
                        self.ever_subscribed = true;
                        let subscribed = Followed::Subscribed {
                            since: self.since.clone(),
                        };
                        match gap {
                            Some(gap) => {
                                self.pending = Some(subscribed);
                                Ok(gap)
                            }
                            None => Ok(subscribed),
                        }
                    }
                    Err(FollowError::Client(e)) if self.ever_subscribed => {
                        Ok(self.drop_conn(e.to_string()))
                    }
                    Err(e) => Err(e),
                };
            }
            while let Some(e) = self.queue.pop_front() {
                if let Some(out) = self.take(e) {
                    return Ok(out);
                }
            }
            let Some(conn) = &mut self.conn else { continue };
            let got = tokio::time::timeout_at(self.next_ping, conn.events.next()).await;
            match got {
                Ok(Some(e)) => {
                    if let Some(out) = self.take(e) {
                        return Ok(out);
                    }
                }
                Ok(None) => return Ok(self.drop_conn("connection closed".into())),
                Err(_) => {
                    self.next_ping = Instant::now() + self.keepalive;
                    if let Err(e) = self.ping().await {
                        return Ok(self.drop_conn(e.to_string()));
                    }
                }
            }
        }
    }

    /// Connect and subscribe (after the last id handed on); after a gap the server
    /// cannot avoid (see the module doc), subscribe again from the oldest it retains
    /// and return the gap.
    async fn open(&mut self) -> Result<Option<Followed>, FollowError> {
        let client = Client::connect(self.proto, &self.addr, self.opts.clone())
            .await
            .map_err(FollowError::Client)?;
        let Some(mut events) = client.events() else {
            return Err(FollowError::Client(ClientError::Unsupported(format!(
                "{} cannot carry events",
                self.proto
            ))));
        };
        let sub = client.subscribe(&self.pattern, self.since.as_deref());
        let mut gap = None;
        match reading(&mut events, &mut self.queue, sub).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                let reason = match gap_reason(&e) {
                    Some("too old") if !self.ever_subscribed => None,
                    reason => reason,
                };
                let Some(reason) = reason else {
                    return Err(FollowError::Refused(e));
                };
                gap = Some(Followed::Gap {
                    after: self.since.replace("0".into()),
                    reason,
                });
                let sub = client.subscribe(&self.pattern, Some("0"));
                match reading(&mut events, &mut self.queue, sub).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(FollowError::Refused(e)),
                    Err(e) => return Err(FollowError::Client(e)),
                }
            }
            Err(e) => return Err(FollowError::Client(e)),
        }
        self.conn = Some(Conn { client, events });
        self.next_ping = Instant::now() + self.keepalive;
        Ok(gap)
    }

    /// A call that changes nothing (`unsubscribe` of no subscription), to see that the
    /// connection still answers.
    async fn ping(&mut self) -> Result<(), ClientError> {
        let Some(conn) = &mut self.conn else {
            return Ok(());
        };
        let params = Params::Positional(vec![Value::Int(0)]);
        let call = conn.client.call("unsubscribe", params);
        // An error reply answers too: the connection works.
        reading(&mut conn.events, &mut self.queue, call)
            .await
            .map(drop)
    }

    /// Hand `e` on, unless the pattern excludes it (STOMP sends every event) or it was
    /// handed on already; the server's events-lost notice ends the connection.
    fn take(&mut self, e: Event) -> Option<Followed> {
        if e.is_lost_notice() {
            let field = |k: &str| {
                e.params
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            let why = format!(
                "the server dropped this subscriber, which fell behind ({}; first lost: {})",
                field("reason"),
                field("first_lost")
            );
            self.backoff = BACKOFF_MIN;
            return Some(self.drop_conn(why));
        }
        if !pattern_matches(&self.pattern, &e.name) {
            return None;
        }
        if let Some((origin, seq)) = e.origin_seq() {
            let last = self.seen.entry(origin).or_insert(0);
            if seq <= *last {
                return None;
            }
            *last = seq;
        }
        if let Some(id) = &e.id {
            self.since = Some(id.clone());
        }
        Some(Followed::Event(e))
    }

    /// Forget the connection; the next call connects again after the backoff.
    fn drop_conn(&mut self, why: String) -> Followed {
        self.conn = None;
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        self.wait = Some(wait);
        Followed::Reconnecting { why, wait }
    }
}

/// Which -32007 `e` is: "restarted instance", "unknown instance" or "too old" (from
/// `data.reason` where the protocol carries it, else from the message, which starts with
/// it; a server older than this case split says "older than the events retained").
/// `None`: another refusal.
fn gap_reason(e: &RpcError) -> Option<&'static str> {
    const SINCE_TOO_OLD: i64 = -32007;
    if e.code != SINCE_TOO_OLD {
        return None;
    }
    let data = e
        .data
        .as_deref()
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str);
    let text = data.unwrap_or(&e.message);
    ["restarted instance", "unknown instance", "too old"]
        .into_iter()
        .find(|r| text.starts_with(r))
        .or(Some("too old"))
}

/// Run `fut` while putting the events that arrive meanwhile in `queue` (a reply may
/// wait behind events: replayed ones come before `subscribe`'s).
async fn reading<T>(
    events: &mut Events,
    queue: &mut VecDeque<Event>,
    fut: impl Future<Output = T>,
) -> T {
    tokio::pin!(fut);
    let mut open = true;
    loop {
        tokio::select! {
            out = &mut fut => return out,
            e = events.next(), if open => match e {
                Some(e) => queue.push_back(e),
                None => open = false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_is_a_gap_other_refusals_are_not() {
        let e = |code, msg: &str| RpcError::new(code, msg);
        let restarted = e(
            -32007,
            "restarted instance: since is from an earlier run (oldest retained: none)",
        );
        assert_eq!(gap_reason(&restarted), Some("restarted instance"));
        let unknown = e(
            -32007,
            "unknown instance: since is from an instance this one has never heard of",
        );
        assert_eq!(gap_reason(&unknown), Some("unknown instance"));
        // data.reason wins where the protocol carries it.
        let mut data = rpcmux_value::Map::default();
        data.insert("reason", Value::from("restarted instance"));
        let with_data = e(-32007, "whatever").with_data(Value::Struct(Box::new(data)));
        assert_eq!(gap_reason(&with_data), Some("restarted instance"));
        // An older server's message, and "too old" itself.
        let older = e(
            -32007,
            "since is older than the events retained here (oldest retained: none)",
        );
        assert_eq!(gap_reason(&older), Some("too old"));
        assert_eq!(gap_reason(&e(-32602, "bad pattern")), None);
        assert_eq!(gap_reason(&e(-32000, "permission denied")), None);
    }
}
