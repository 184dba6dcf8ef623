//! A small VDSM-like host API kept in memory, written as typed verbs: the parameters
//! are plain structs (their fields are the parameter names, in order), the results
//! plain `Serialize` structs, the domain errors an enum that converts into `RpcError`.

use crate::verbs::{RegisterError, VerbTable};
use crate::CallContext;
use rpcmux_value::{Map, RpcError, Value};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Domain error code for an unknown VM, as VDSM numbers it (`noVM`).
pub const ERR_NO_SUCH_VM: i64 = 1;
/// Domain error code for a VM id already in use, as VDSM numbers it (`exist`).
pub const ERR_VM_EXISTS: i64 = 4;

/// The memory a VM gets when `VM.create` is not told (MiB).
const DEFAULT_MEM_MIB: i64 = 1024;

/// The host API's failures; each becomes an error with VDSM's code in every protocol.
enum HostError {
    NoSuchVm(String),
    VmExists(String),
}

impl From<HostError> for RpcError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::NoSuchVm(id) => RpcError::new(
                ERR_NO_SUCH_VM,
                format!("Virtual machine does not exist: {id}"),
            ),
            HostError::VmExists(id) => RpcError::new(
                ERR_VM_EXISTS,
                format!("Virtual machine already exists: {id}"),
            ),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CreateVm {
    /// The new VM's id.
    #[serde(rename = "vmID")]
    vm_id: String,
    /// Its display name.
    name: String,
    /// Memory in MiB (default 1024).
    #[serde(default = "default_mem")]
    mem_size: i64,
}

fn default_mem() -> i64 {
    DEFAULT_MEM_MIB
}

#[derive(Deserialize, JsonSchema)]
struct VmId {
    /// The VM's id.
    #[serde(rename = "vmID")]
    vm_id: String,
}

/// What the host knows of a VM.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct VmInfo {
    vm_id: String,
    vm_name: String,
    mem_size: i64,
    status: &'static str,
    /// Seconds since it was created (`VM.getStats` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_time: Option<u64>,
}

#[derive(Clone)]
struct Vm {
    name: String,
    mem_size: i64,
    created: Instant,
}

type Vms = Arc<Mutex<BTreeMap<String, Vm>>>;

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    let vms = Vms::default();

    let store = vms.clone();
    t.verb("Host.getVMList")
        .help("List the ids of the VMs on this host.")
        .typed(move |(): (), _| {
            let ids: Vec<String> = lock(&store).keys().cloned().collect();
            async move { Ok::<_, RpcError>(ids) }
        })?;
    t.alias("list", "Host.getVMList")?;

    let store = vms.clone();
    t.verb("VM.create")
        .help("Create a VM (in memory). Errors: code 4 if the vmID exists. Publishes |virt|VM_status|<vmID>.")
        .typed(move |p: CreateVm, ctx: CallContext| {
            let created = create(&store, &p);
            async move {
                created?;
                publish_status(&ctx, &p.vm_id, "Up");
                Ok::<_, HostError>(VmInfo {
                    vm_id: p.vm_id,
                    vm_name: p.name,
                    mem_size: p.mem_size,
                    status: "Up",
                    elapsed_time: None,
                })
            }
        })?;

    let store = vms.clone();
    t.verb("VM.getStats")
        .help("Return a VM's status and figures. Errors: code 1 if there is no such VM.")
        .typed(move |p: VmId, _| {
            let vm = lock(&store).get(&p.vm_id).cloned();
            async move {
                let vm = vm.ok_or_else(|| HostError::NoSuchVm(p.vm_id.clone()))?;
                Ok::<_, HostError>(VmInfo {
                    vm_id: p.vm_id,
                    vm_name: vm.name,
                    mem_size: vm.mem_size,
                    status: "Up",
                    elapsed_time: Some(vm.created.elapsed().as_secs()),
                })
            }
        })?;

    let store = vms;
    t.verb("VM.destroy")
        .help("Destroy a VM. Errors: code 1 if there is no such VM. Publishes |virt|VM_status|<vmID>.")
        .typed(move |p: VmId, ctx: CallContext| {
            let removed = lock(&store).remove(&p.vm_id);
            async move {
                removed.ok_or_else(|| HostError::NoSuchVm(p.vm_id.clone()))?;
                publish_status(&ctx, &p.vm_id, "Down");
                Ok::<_, HostError>(true)
            }
        })?;
    Ok(())
}

fn create(store: &Vms, p: &CreateVm) -> Result<(), HostError> {
    let mut vms = lock(store);
    if vms.contains_key(&p.vm_id) {
        return Err(HostError::VmExists(p.vm_id.clone()));
    }
    let vm = Vm {
        name: p.name.clone(),
        mem_size: p.mem_size,
        created: Instant::now(),
    };
    vms.insert(p.vm_id.clone(), vm);
    Ok(())
}

fn publish_status(ctx: &CallContext, id: &str, status: &str) {
    let mut inner = Map::new();
    inner.insert("status", status.into());
    let mut params = Map::new();
    params.insert(id.to_owned(), Value::Struct(Box::new(inner)));
    ctx.events.publish(&format!("|virt|VM_status|{id}"), params);
}

/// The VM store's lock; a panic in another call does not make it unusable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
