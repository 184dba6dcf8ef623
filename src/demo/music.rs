//! `echoMusicEntry`: the benchmark's MusicEntry struct (shared/reference/payload.py)
//! as a typed verb, so `rpcmux bench --payload musicentry-typed` measures the typed
//! path against the dynamic `echo` with the same bytes on the wire.

use crate::verbs::{RegisterError, VerbTable};
use rpcmux_value::{RpcError, Str};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One concert listing, as the classic XML-RPC benchmarks send it.
///
/// Its strings are [`Str`]s, the data model's small strings: up to 24 bytes inline, so
/// reading one from the wire allocates nothing (21 of the benchmark's 23). A verb after
/// speed does the same; `String` fields work too, one allocation each.
#[derive(Deserialize, Serialize, JsonSchema)]
struct MusicEntry {
    email: Str,
    time: Str,
    tickets: Str,
    program: Str,
    state: Str,
    start: Str,
    venueurl: Str,
    country: Str,
    performers: Vec<Str>,
    addressid: i64,
    name: Str,
    zip: Str,
    city: Str,
    info: Str,
    merchandise: Vec<Str>,
    event: Str,
    keywords: Vec<Str>,
    submit_time: Str,
    key: i64,
    active: i64,
    end: Str,
    price: Str,
    address3: Str,
    address1: Str,
    venue: Str,
    address2: Str,
    update_time: Str,
}

#[derive(Deserialize, JsonSchema)]
struct Params {
    /// `["MusicEntry", {...}]`: the tag and the entry. Boxed: the entry is 650 bytes,
    /// which would be copied at every step from the reader to the handler and back to
    /// the writer (5 % of the call); a box moves as a pointer.
    value: (Str, Box<MusicEntry>),
}

pub(super) fn register(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("echoMusicEntry")
        .help("Return a [\"MusicEntry\", entry] pair unchanged, read into and written from a Rust struct (the typed path's benchmark).")
        .typed_sync(|p: Params, _| Ok::<_, RpcError>(p.value))?;
    Ok(())
}
