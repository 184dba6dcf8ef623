//! The built-in demo verbs a newcomer tries first (`--no-demo` turns them off):
//! `ping`, `echo`, `sleep`, `whoami`, `subscribe`/`unsubscribe`, and a small VDSM-like host API
//! kept in memory (`Host.getVMList`, `VM.create`, `VM.getStats`, `VM.destroy`).

use crate::verbs::VerbTable;
use rpcmux_value::{vstruct, Map, RpcError, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Domain error codes, as VDSM numbers them (`noVM` = 1, `exist` = 4).
pub const ERR_NO_SUCH_VM: i64 = 1;
pub const ERR_VM_EXISTS: i64 = 4;
/// `sleep` refuses anything longer, so a demo call cannot pin a connection for hours.
pub const MAX_SLEEP_MS: i64 = 60_000;

#[derive(Clone)]
struct Vm {
    name: String,
    mem_size: i64,
    created: std::time::Instant,
}

/// Register the demo verbs into `t`.
pub fn register(t: &mut VerbTable) {
    t.verb("ping")
        .returns("boolean")
        .help("Answer true: a liveness check.")
        .handler(|_, _| async { Ok(Value::Bool(true)) });
    t.verb("echo")
        .typed_param("value", "any", false)
        .returns("any")
        .help("Return value unchanged, whatever its type.")
        .handler(|mut a, _| async move { Ok(a.take_value(0)) });
    t.verb("whoami")
        .returns("struct")
        .help("Describe the caller as the server sees it: peer (the client address, from a trusted PROXY header when there is one), identity (the verified TLS client certificate's subject CN or first SAN, or nil), protocol.")
        .handler(|_, ctx| async move {
            Ok(vstruct! {
                "peer" => ctx.peer.map(|p| p.to_string()),
                "identity" => ctx.peer_identity.as_deref(),
                "protocol" => ctx.protocol,
            })
        });
    t.verb("sleep")
        .typed_param("ms", "int", false)
        .returns("int")
        .help("Sleep ms milliseconds (at most 60000), then return ms.")
        .handler(|mut a, _| async move {
            let ms: i64 = a.take(0)?;
            if !(0..=MAX_SLEEP_MS).contains(&ms) {
                return Err(RpcError::invalid_params(format!(
                    "ms must be between 0 and {MAX_SLEEP_MS}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            Ok(Value::Int(ms))
        });
    register_events(t);
    register_host(t);
}

fn register_events(t: &mut VerbTable) {
    t.verb("subscribe")
        .typed_param("pattern", "string", false)
        .returns("int")
        .help("Receive server events whose name starts with pattern ('*' for all) on this connection, as notifications. Returns a subscription id. Only on connections that can carry notifications (raw-TCP JSON-RPC, msgpack-rpc, STOMP).")
        .handler(|mut a, ctx| async move {
            let pattern: String = a.take(0)?;
            let session = ctx.session.clone().ok_or_else(|| {
                RpcError::new(-32000, format!("{} cannot carry events; use raw-TCP JSON-RPC, msgpack-rpc or STOMP", ctx.protocol))
            })?;
            Ok(Value::Int(ctx.events.subscribe(&pattern, session)? as i64))
        });
    t.verb("unsubscribe")
        .typed_param("id", "int", false)
        .returns("boolean")
        .help("Cancel a subscription made with subscribe.")
        .handler(|mut a, ctx| async move {
            let id: i64 = a.take(0)?;
            let Some(session) = &ctx.session else {
                return Ok(Value::Bool(false));
            };
            Ok(Value::Bool(
                ctx.events.unsubscribe(session.conn_id, id as u64),
            ))
        });
}

fn register_host(t: &mut VerbTable) {
    let vms: Arc<Mutex<BTreeMap<String, Vm>>> = Arc::default();

    let store = vms.clone();
    t.verb("Host.getVMList")
        .returns("array")
        .help("List the ids of the VMs on this host.")
        .handler(move |_, _| {
            let ids = lock(&store).keys().cloned().map(Value::from).collect();
            async move { Ok(Value::Array(ids)) }
        });
    t.alias("list", "Host.getVMList");

    let store = vms.clone();
    t.verb("VM.create")
        .typed_param("vmID", "string", false)
        .typed_param("name", "string", false)
        .typed_param("memSize", "int", false)
        .returns("struct")
        .help("Create a VM (in memory). Errors: code 4 if the vmID exists. Publishes |virt|VM_status|<vmID>.")
        .handler(move |mut a, ctx| {
            let store = store.clone();
            async move {
                let id: String = a.take(0)?;
                let name: String = a.take(1)?;
                let mem_size: i64 = a.take(2)?;
                {
                    let mut vms = lock(&store);
                    if vms.contains_key(&id) {
                        return Err(RpcError::new(ERR_VM_EXISTS, format!("Virtual machine already exists: {id}")));
                    }
                    let created = std::time::Instant::now();
                    vms.insert(id.clone(), Vm { name: name.clone(), mem_size, created });
                }
                publish_status(&ctx, &id, "Up");
                Ok(vstruct! { "vmId" => id, "vmName" => name, "memSize" => mem_size, "status" => "Up" })
            }
        });

    let store = vms.clone();
    t.verb("VM.getStats")
        .typed_param("vmID", "string", false)
        .returns("struct")
        .help("Return a VM's status and figures. Errors: code 1 if there is no such VM.")
        .handler(move |mut a, _| {
            let store = store.clone();
            async move {
                let id: String = a.take(0)?;
                let vm = lock(&store).get(&id).cloned().ok_or_else(|| no_vm(&id))?;
                Ok(vstruct! {
                    "vmId" => id, "vmName" => vm.name, "memSize" => vm.mem_size,
                    "status" => "Up", "elapsedTime" => vm.created.elapsed().as_secs() as i64,
                })
            }
        });

    let store = vms;
    t.verb("VM.destroy")
        .typed_param("vmID", "string", false)
        .returns("boolean")
        .help("Destroy a VM. Errors: code 1 if there is no such VM. Publishes |virt|VM_status|<vmID>.")
        .handler(move |mut a, ctx| {
            let store = store.clone();
            async move {
                let id: String = a.take(0)?;
                lock(&store).remove(&id).ok_or_else(|| no_vm(&id))?;
                publish_status(&ctx, &id, "Down");
                Ok(Value::Bool(true))
            }
        });
}

fn publish_status(ctx: &crate::CallContext, id: &str, status: &str) {
    let mut inner = Map::default();
    inner.insert("status".into(), status.into());
    let mut params = Map::default();
    params.insert(id.to_owned(), Value::Struct(Box::new(inner)));
    ctx.events.publish(&format!("|virt|VM_status|{id}"), params);
}

fn no_vm(id: &str) -> RpcError {
    RpcError::new(
        ERR_NO_SUCH_VM,
        format!("Virtual machine does not exist: {id}"),
    )
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
