//! `echoMusicEntry`: the benchmark's MusicEntry struct (shared/reference/payload.py)
//! as a typed verb, so `rpcmux bench --payload musicentry-typed` measures the typed
//! path against the dynamic `echo` with the same bytes on the wire.

use crate::verbs::{RegisterError, VerbTable};
use rpcmux_value::RpcError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One concert listing, as the classic XML-RPC benchmarks send it.
#[derive(Deserialize, Serialize, JsonSchema)]
struct MusicEntry {
    email: String,
    time: String,
    tickets: String,
    program: String,
    state: String,
    start: String,
    venueurl: String,
    country: String,
    performers: Vec<String>,
    addressid: i64,
    name: String,
    zip: String,
    city: String,
    info: String,
    merchandise: Vec<String>,
    event: String,
    keywords: Vec<String>,
    submit_time: String,
    key: i64,
    active: i64,
    end: String,
    price: String,
    address3: String,
    address1: String,
    venue: String,
    address2: String,
    update_time: String,
}

#[derive(Deserialize, JsonSchema)]
struct Params {
    /// `["MusicEntry", {...}]`: the tag and the entry. Boxed: the entry is 650 bytes,
    /// which would be copied at every step from the reader to the handler and back to
    /// the writer (5 % of the call); a box moves as a pointer.
    value: (String, Box<MusicEntry>),
}

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("echoMusicEntry")
        .help("Return a [\"MusicEntry\", entry] pair unchanged, read into and written from a Rust struct (the typed path's benchmark).")
        .typed_sync(|p: Params, _| Ok::<_, RpcError>(p.value))?;
    Ok(())
}
