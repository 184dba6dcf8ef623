//! Subscriptions counted per connection, across the sessions it carries, and per client
//! address (issue 46, case 9).
//!
//! What a client may rely on, and why: `max_subscriptions` bounds one *session*; one
//! HTTP/2 connection carries many WebSocket sessions (RFC 8441), and 32 connections of
//! 128 sessions of 64 subscriptions of 1 KiB patterns held 262,144 subscriptions and
//! +444 MB from one address. So every session also charges the connection it rides on
//! and the client address it comes from:
//! - the subscriptions of all the sessions of one connection, made or answered and not
//!   yet made, are at most `max_connection_subscriptions` (for a connection that is one
//!   session, the smaller of the two caps binds);
//! - those of all the connections of one client address (IPv6: its /64; a Unix socket:
//!   its uid) are at most `max_subscriptions_per_ip`;
//! - past either, `subscribe` is refused with -32002 naming the cap, and nothing is
//!   subscribed.
//!
//! A subscription is counted from the moment it is accepted until it leaves the hub
//! (`unsubscribe`, the session's end, dropped as too slow) or, answered with `since`,
//! until its session is gone without making it. A pattern is at most
//! [`MAX_PATTERN`](crate::events::hub::MAX_PATTERN) bytes, so what subscriptions hold is
//! bounded per connection by its cap times a pattern and its entry, and per address by
//! `max_subscriptions_per_ip` times the same.

use crate::codes::ERR_TOO_MANY_SUBSCRIPTIONS;
use crate::conn::per_ip::PerIp;
use crate::conn::Peer;
use rpcmux_value::RpcError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One connection's count of subscriptions, shared by its sessions.
pub(crate) struct ConnSubs {
    held: AtomicUsize,
    /// `max_connection_subscriptions` (0: no cap).
    max: usize,
    /// The address table the connection's subscriptions are also charged to.
    per_ip: Option<(Arc<PerIp>, Peer)>,
}

impl std::fmt::Debug for ConnSubs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnSubs")
            .field("held", &self.held)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl ConnSubs {
    /// The count for a new connection from `peer`: at most `max` (0: no cap), and
    /// charged to `per_ip` when it caps subscriptions per address.
    pub(crate) fn for_connection(per_ip: &Arc<PerIp>, max: usize, peer: &Peer) -> Arc<ConnSubs> {
        Arc::new(ConnSubs {
            held: AtomicUsize::new(0),
            max,
            per_ip: per_ip.counts_subs().then(|| (per_ip.clone(), *peer)),
        })
    }

    /// A count with no cap and no address (a hub used alone, in tests).
    #[cfg(test)]
    pub(crate) fn unbounded() -> Arc<ConnSubs> {
        Arc::new(ConnSubs {
            held: AtomicUsize::new(0),
            max: 0,
            per_ip: None,
        })
    }

    /// A count capped at `max` per connection, with no address (tests).
    #[cfg(test)]
    pub(crate) fn capped(max: usize) -> Arc<ConnSubs> {
        Arc::new(ConnSubs {
            held: AtomicUsize::new(0),
            max,
            per_ip: None,
        })
    }

    /// Count one subscription more, or -32002 naming the cap it would pass.
    pub(crate) fn take(&self) -> Result<(), RpcError> {
        let max = self.max;
        let taken = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (max == 0 || n < max).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(RpcError::new(
                ERR_TOO_MANY_SUBSCRIPTIONS,
                format!("too many subscriptions on this connection, its sessions together (max_connection_subscriptions = {max})"),
            ));
        }
        if let Some((table, peer)) = &self.per_ip {
            if !table.take_sub(peer) {
                self.held.fetch_sub(1, Ordering::AcqRel);
                return Err(RpcError::new(
                    ERR_TOO_MANY_SUBSCRIPTIONS,
                    format!(
                        "too many subscriptions from this client address (max_subscriptions_per_ip = {})",
                        table.max_subs()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Give back `n` subscriptions that left the hub.
    pub(crate) fn give(&self, n: usize) {
        if n == 0 {
            return;
        }
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                Some(h.saturating_sub(n))
            });
        if let Some((table, peer)) = &self.per_ip {
            table.give_subs(peer, n);
        }
    }

    /// Subscriptions counted now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::budget::Budget;
    use crate::events::{outbox, EventHub, Session};
    use tokio_util::sync::CancellationToken;

    /// A session numbered `id` on the connection counted by `conn`.
    fn session(id: u64, conn: &Arc<ConnSubs>) -> (Session, outbox::OutboxRx) {
        let (tx, rx) = outbox::outbox(16, Budget::new(1 << 20));
        let s = Session::on_connection(id, tx, CancellationToken::new(), None, conn.clone());
        (s, rx)
    }

    /// The hub's every way in and out keeps the connection's count: subscribe and
    /// answered (`since`) ones count, unsubscribe, a closed session and an answered
    /// subscription never made give back.
    #[test]
    fn the_hub_counts_a_connections_sessions_together() {
        let hub = EventHub::default();
        let conn = ConnSubs::capped(3);
        let (a, _ra) = session(1, &conn);
        let (b, _rb) = session(2, &conn);
        let x = hub.subscribe("|a", a.clone()).unwrap();
        hub.subscribe("|b", a.clone()).unwrap();
        hub.subscribe("|c", b.clone()).unwrap();
        let e = hub.subscribe("|d", b.clone()).unwrap_err();
        assert_eq!(e.code, ERR_TOO_MANY_SUBSCRIPTIONS);
        assert!(
            e.message.contains("max_connection_subscriptions = 3"),
            "{e:?}"
        );
        assert_eq!(conn.held(), 3);
        assert!(hub.unsubscribe(1, x));
        assert!(!hub.unsubscribe(1, x), "twice gives back once");
        assert_eq!(conn.held(), 2);
        hub.drop_connection(1);
        assert_eq!(conn.held(), 1);
        // Made by a call with `since` (held until its reply): counted at once, and
        // given back with its session.
        let options = crate::events::SubOptions {
            since: Some(crate::events::Since::Oldest),
            resumable: true,
            notify: None,
        };
        let (c, rc) = session(3, &conn);
        hub.subscribe_call("|e", c.clone(), options).unwrap();
        assert_eq!(conn.held(), 2);
        hub.drop_connection(3);
        drop((c, rc));
        assert_eq!(conn.held(), 1, "it went with its session");
        hub.drop_connection(2);
        drop((a, b));
        assert_eq!(conn.held(), 0);
    }

    fn peer(ip: &str) -> Peer {
        Peer::Tcp(std::net::SocketAddr::new(ip.parse().unwrap(), 1))
    }

    #[test]
    fn capped_per_connection_and_per_address_and_given_back() {
        let table = PerIp::with_subs(0, 0, 5);
        let conn = |max| ConnSubs {
            held: AtomicUsize::new(0),
            max,
            per_ip: Some((table.clone(), peer("10.0.0.1"))),
        };
        let (a, b) = (conn(3), conn(3));
        for _ in 0..3 {
            a.take().unwrap();
        }
        let e = a.take().unwrap_err();
        assert_eq!(e.code, ERR_TOO_MANY_SUBSCRIPTIONS);
        assert!(
            e.message.contains("max_connection_subscriptions = 3"),
            "{e:?}"
        );
        b.take().unwrap();
        b.take().unwrap();
        let e = b.take().unwrap_err();
        assert!(e.message.contains("max_subscriptions_per_ip = 5"), "{e:?}");
        assert_eq!(b.held(), 2, "a refusal by the address is not counted");
        a.give(3);
        assert_eq!(a.held(), 0);
        b.take().unwrap();
        // Another address is counted apart.
        let c = ConnSubs {
            held: AtomicUsize::new(0),
            max: 0,
            per_ip: Some((table.clone(), peer("10.0.0.2"))),
        };
        for _ in 0..5 {
            c.take().unwrap();
        }
        b.give(3);
        c.give(5);
        assert_eq!(table.subs_held(&peer("10.0.0.1")), 0);
    }
}
