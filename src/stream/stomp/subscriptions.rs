//! One connection's STOMP subscriptions, and VDSM's destination matching.
//!
//! Who gets a message (docs/stomp.md, "Replies"):
//! - an **event** goes to every subscription that covers its destination (each one is a
//!   listener, as in VDSM's broker);
//! - a **reply** answers one request, so it goes to exactly one subscription: the most
//!   specific one that covers its `reply-to` (the longest destination: the exact
//!   destination before its parent, a nearer parent before a farther one), and among
//!   several on that same destination the first made. A parent subscription made
//!   earlier (`jms.topic.vdsm_responses`) never takes a reply meant for a subscription
//!   on the exact `reply-to` (`jms.topic.vdsm_responses.node:colon`, stompjs's layout);
//!   two subscriptions on one destination (VDSM's `stomp_test.test_event`: its response
//!   queue and an event subscription, both `jms.queue.events`) get the reply once, on
//!   the first made, where VDSM's broker sends it to both and its own client then fails
//!   on the second copy (`JsonRpcClient` pops the call the first copy answered).
//!
//! The table lives inside the connection's session, never in a map shared by
//! connections: VDSM kept one global `id → reply-to` map for all clients, so two
//! clients using the same request ids could receive each other's replies.

/// At most this many subscriptions per connection (VDSM had no cap; each one costs
/// memory and a scan per delivered message).
pub(crate) const MAX_SUBSCRIPTIONS: usize = 256;

/// At most this many bytes of subscription ids and destinations per connection (a
/// header may be 8 KiB: 256 subscriptions of two could hold 4 MiB per connection).
pub(crate) const MAX_SUBSCRIPTION_BYTES: usize = 64 * 1024;

/// Does a subscription to `subscribed` receive messages sent to `dest`? VDSM's rule: the
/// same destination, or a `.`-separated ancestor of it (`jms.queue` covers
/// `jms.queue.events`, `jms.que` does not).
pub(crate) fn dest_covers(subscribed: &str, dest: &str) -> bool {
    match dest.strip_prefix(subscribed) {
        Some(rest) => rest.is_empty() || rest.starts_with('.'),
        None => false,
    }
}

#[derive(Debug)]
struct Sub {
    id: String,
    destination: String,
}

/// Why a SUBSCRIBE was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    DuplicateId,
    TooMany,
    TooLarge,
}

/// Subscriptions by id, in the order they were made (messages go out in that order).
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    subs: Vec<Sub>,
    /// Bytes of ids and destinations held.
    bytes: usize,
}

impl Subscriptions {
    pub(crate) fn add(&mut self, id: &str, destination: &str) -> Result<(), Refused> {
        if self.subs.iter().any(|s| s.id == id) {
            return Err(Refused::DuplicateId);
        }
        if self.subs.len() >= MAX_SUBSCRIPTIONS {
            return Err(Refused::TooMany);
        }
        let bytes = id.len() + destination.len();
        if self.bytes + bytes > MAX_SUBSCRIPTION_BYTES {
            return Err(Refused::TooLarge);
        }
        self.bytes += bytes;
        self.subs.push(Sub {
            id: id.to_owned(),
            destination: destination.to_owned(),
        });
        Ok(())
    }

    /// Remove a subscription; false if there was none with this id.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        let Some(at) = self.subs.iter().position(|s| s.id == id) else {
            return false;
        };
        let gone = self.subs.remove(at);
        self.bytes -= gone.id.len() + gone.destination.len();
        true
    }

    /// The ids of the subscriptions that receive a message sent to `dest`.
    pub(crate) fn covering<'a>(&'a self, dest: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.subs
            .iter()
            .filter(move |s| dest_covers(&s.destination, dest))
            .map(|s| s.id.as_str())
    }

    /// The one subscription a reply to `dest` goes to: the most specific that covers it
    /// (longest destination; all covering destinations are prefixes of `dest`, so equal
    /// length means the same destination), the first made among equals.
    pub(crate) fn reply_target(&self, dest: &str) -> Option<&str> {
        let mut best: Option<&Sub> = None;
        for s in self
            .subs
            .iter()
            .filter(|s| dest_covers(&s.destination, dest))
        {
            if best.is_none_or(|b| s.destination.len() > b.destination.len()) {
                best = Some(s);
            }
        }
        best.map(|s| s.id.as_str())
    }

    pub(crate) fn covers(&self, dest: &str) -> bool {
        self.covering(dest).next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchical_matching_is_segment_wise() {
        assert!(dest_covers("jms.queue.events", "jms.queue.events"));
        assert!(dest_covers("jms.queue", "jms.queue.events"));
        assert!(dest_covers("jms", "jms.queue.events"));
        assert!(!dest_covers("jms.que", "jms.queue.events"));
        assert!(!dest_covers("jms.queue.events.x", "jms.queue.events"));
        assert!(!dest_covers("jms.topic", "jms.queue.events"));
    }

    #[test]
    fn ids_are_unique_and_removable() {
        let mut s = Subscriptions::default();
        s.add("a", "jms.topic.vdsm_responses").unwrap();
        s.add("b", "jms.topic").unwrap();
        assert_eq!(s.add("a", "x"), Err(Refused::DuplicateId));
        let ids: Vec<_> = s.covering("jms.topic.vdsm_responses").collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(!s.covers("jms.queue.events"));
        assert!(s.remove("a"));
        assert!(!s.remove("a"));
        assert_eq!(s.covering("jms.topic.vdsm_responses").count(), 1);
    }

    /// A reply goes to the most specific covering subscription, whatever order they
    /// were made in; among subscriptions on one destination, to the first made.
    #[test]
    fn a_reply_goes_to_the_most_specific_subscription_then_the_first_made() {
        let mut s = Subscriptions::default();
        s.add("parent", "jms.topic.vdsm_responses").unwrap();
        s.add("top", "jms").unwrap();
        s.add("exact", "jms.topic.vdsm_responses.node:colon")
            .unwrap();
        s.add("exact-2", "jms.topic.vdsm_responses.node:colon")
            .unwrap();
        assert_eq!(
            s.reply_target("jms.topic.vdsm_responses.node:colon"),
            Some("exact")
        );
        // No exact subscription: the nearest parent, not the first made.
        assert_eq!(
            s.reply_target("jms.topic.vdsm_responses.other"),
            Some("parent")
        );
        assert_eq!(s.reply_target("jms.queue.events"), Some("top"));
        assert_eq!(s.reply_target("other"), None);
        // VDSM's layout: two subscriptions on the reply destination, the first made gets it.
        let mut v = Subscriptions::default();
        v.add("response-queue", "jms.queue.events").unwrap();
        v.add("events", "jms.queue.events").unwrap();
        assert_eq!(v.reply_target("jms.queue.events"), Some("response-queue"));
        // Once the exact one is gone, the parent takes replies again.
        assert!(s.remove("exact"));
        assert!(s.remove("exact-2"));
        assert_eq!(
            s.reply_target("jms.topic.vdsm_responses.node:colon"),
            Some("parent")
        );
    }

    #[test]
    fn bytes_are_capped_and_given_back() {
        let mut s = Subscriptions::default();
        let long = "d".repeat(MAX_SUBSCRIPTION_BYTES / 2);
        s.add("a", &long).unwrap();
        assert_eq!(s.add("b", &long), Err(Refused::TooLarge));
        assert!(s.remove("a"));
        s.add("b", &long).unwrap();
    }

    #[test]
    fn capped() {
        let mut s = Subscriptions::default();
        for i in 0..MAX_SUBSCRIPTIONS {
            s.add(&i.to_string(), "d").unwrap();
        }
        assert_eq!(s.add("one-more", "d"), Err(Refused::TooMany));
    }
}
