//! What a subscription asked for besides its pattern: where to start, and how its
//! events are written.

use crate::events::outbox::Delivery;
use crate::events::Since;
use std::sync::Arc;

/// What a subscription asked for besides its pattern.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// Start after this event (replaying the retained ones after it).
    pub since: Option<Since>,
    /// Notifications carry `event_id`.
    pub resumable: bool,
    /// Notifications in the `{"subscription": ID, "result": EVENT}` shape, with this
    /// method (jsonrpsee's and Ethereum's clients); one per such subscription.
    pub notify: Option<Arc<str>>,
}

impl Options {
    /// How an event is written for subscription `id` with these options.
    pub(crate) fn delivery(&self, id: u64) -> Delivery {
        Delivery {
            resumable: self.resumable,
            shape: self.notify.as_ref().map(|m| (id, m.clone())),
        }
    }
}
