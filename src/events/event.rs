//! One event, and its encodings made once and shared by every subscriber.

use crate::conn::budget::Budget;
use bytes::Bytes;
use rpcmux_value::Value;
use std::sync::{Arc, OnceLock};

/// One event, shared by every subscriber that receives it.
#[derive(Debug, Clone)]
pub struct Event {
    /// VDSM-style name, e.g. `|virt|VM_status|<vmID>`.
    pub name: String,
    /// A struct of event data; carries `notify_time` (ms since epoch), as VDSM sends.
    pub params: Value,
    /// The event as each wire format sends it: encoded by the first subscriber that
    /// needs it and shared by the rest (256 subscribers of an 8 MiB event hold one
    /// copy, not 256).
    encoded: Encoded,
}

#[derive(Debug, Clone, Default)]
struct Encoded {
    json: OnceLock<Bytes>,
    msgpack: OnceLock<Option<Bytes>>,
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.name == other.name && self.params == other.params
    }
}

impl Event {
    /// An event named `name` carrying `params`.
    pub fn new(name: impl Into<String>, params: Value) -> Event {
        Event {
            name: name.into(),
            params,
            encoded: Encoded::default(),
        }
    }

    /// The JSON-RPC notification for this event (no line end), encoded once; a big
    /// one is charged to `budget` while any connection holds it.
    pub(crate) fn json(&self, budget: &Arc<Budget>) -> Bytes {
        self.encoded
            .json
            .get_or_init(|| {
                let mut body = Vec::with_capacity(128);
                rpcmux_jsonrpc::write_notification(&mut body, &self.name, &self.params);
                crate::conn::out::shared(body, budget)
            })
            .clone()
    }

    /// The msgpack-rpc notification for this event, encoded once (see [`Event::json`]);
    /// `None` when its params cannot be encoded (logged once).
    pub(crate) fn msgpack(&self, budget: &Arc<Budget>) -> Option<Bytes> {
        self.encoded
            .msgpack
            .get_or_init(|| {
                let mut body = bytes::BytesMut::with_capacity(128);
                let params = std::slice::from_ref(&self.params);
                match rpcmux_msgpack_rpc::encode_notification(&mut body, &self.name, params) {
                    Ok(()) => Some(crate::conn::out::shared(body, budget)),
                    Err(e) => {
                        tracing::warn!(error = %e, event = %self.name, "event not encodable as msgpack");
                        None
                    }
                }
            })
            .clone()
    }
}
