//! `Host.publishEvent`: publish any event, so a client (a test, the fan-out benchmark,
//! someone trying `subscribe` by hand) can produce events without creating VMs.

use crate::verbs::{RegisterError, VerbTable};
use crate::CallContext;
use rpcmux_value::{Map, RpcError, Value};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct PublishEvent {
    /// The event's name, e.g. `|test|tick|1`; subscribers match it by prefix.
    name: String,
    /// A struct of event data (default empty); `notify_time` is added.
    #[serde(default)]
    params: Option<Value>,
}

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("Host.publishEvent")
        .help("Publish an event named name with the struct params (notify_time is added) to every subscriber, on every instance when [events] url is set. Returns how many connections of this instance received it.")
        .typed(|p: PublishEvent, ctx: CallContext| async move {
            let params = match p.params {
                None | Some(Value::Nil) => Map::new(),
                Some(Value::Struct(m)) => *m,
                Some(other) => {
                    return Err(RpcError::invalid_params(format!(
                        "params must be a struct, not {}",
                        other.type_name()
                    )))
                }
            };
            if p.name.is_empty() {
                return Err(RpcError::invalid_params("name must not be empty"));
            }
            Ok(ctx.events.publish(&p.name, params) as i64)
        })?;
    Ok(())
}
