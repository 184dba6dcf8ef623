//! The `[stomp]` section of the config file: which destinations mean what.
//!
//! The defaults are oVirt's (engine `VdsRequestQueueName`, `IrsRequestQueueName`,
//! `VdsResponseQueueName`, `EventQueueName`), so an engine-style client works unconfigured.

use serde::Deserialize;

/// STOMP destinations. Matching is VDSM's `.`-hierarchical one: a frame addressed to
/// `a.b.c` belongs to `a.b.c`, `a.b` and `a`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct StompConfig {
    /// A SEND to one of these (or below one) carries a JSON-RPC request or batch.
    pub request_destinations: Vec<String>,
    /// Where replies go when a SEND has no `reply-to` header.
    pub response_destination: String,
    /// Where server events are delivered; subscribe to it (or a parent) to get them.
    pub event_destination: String,
}

impl Default for StompConfig {
    fn default() -> Self {
        StompConfig {
            request_destinations: vec![
                "jms.topic.vdsm_requests".into(),
                "jms.topic.vdsm_irs_requests".into(),
            ],
            response_destination: "jms.topic.vdsm_responses".into(),
            event_destination: "jms.queue.events".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_section_overrides_and_rejects_typos() {
        let c: StompConfig = toml::from_str("response_destination = \"r\"\n").unwrap();
        assert_eq!(c.response_destination, "r");
        assert_eq!(c.event_destination, "jms.queue.events");
        assert_eq!(c.request_destinations.len(), 2);
        assert!(toml::from_str::<StompConfig>("event_destinaton = \"x\"\n").is_err());
    }
}
