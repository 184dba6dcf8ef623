//! Differential: rpcmux's typed msgpack reader and writer (`typed/de.rs`, `typed/ser.rs`)
//! against rmp-serde, over the shapes in `src/typed_params.rs` (the first input byte
//! picks one).
//!
//! - Reading: the rest of the input, read as that shape by `typed::from_slice` and by
//!   rmp-serde (which must also consume every byte): the same value (compared by
//!   `Debug`, so NaN = NaN and -0.0 ≠ 0.0), or both an error.
//! - Writing: a value of that shape made from the same bytes, written by rpcmux, reads
//!   back equal through rmp-serde; and written by rmp-serde, as a map (`to_vec_named`)
//!   and as an array (`to_vec`), reads back equal through rpcmux.
#![no_main]
use libfuzzer_sys::arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::typed_params::*;
use rpcmux_msgpack_rpc::typed;
use serde::{de::DeserializeOwned, Serialize};
use std::fmt::Debug;

/// rmp-serde's reading of the whole of `buf` as a `T`.
fn rmp_read<T: DeserializeOwned>(buf: &[u8]) -> Result<T, String> {
    let mut cur = std::io::Cursor::new(buf);
    let v =
        T::deserialize(&mut rmp_serde::Deserializer::new(&mut cur)).map_err(|e| e.to_string())?;
    match buf.len() as u64 - cur.position() {
        0 => Ok(v),
        n => Err(format!("{n} bytes after the value")),
    }
}

/// Every bin in a value turned into a str (lossily where it is not UTF-8).
fn bins_as_strs(v: &mut rmpv::Value) -> bool {
    use rmpv::Value as Mp;
    match v {
        Mp::Binary(b) => {
            *v = Mp::from(String::from_utf8_lossy(b).into_owned());
            true
        }
        Mp::Array(items) => items.iter_mut().fold(false, |any, i| bins_as_strs(i) | any),
        Mp::Map(entries) => entries
            .iter_mut()
            .fold(false, |any, (k, v)| bins_as_strs(k) | bins_as_strs(v) | any),
        _ => false,
    }
}

/// The documented difference: rmp-serde reads a bin where a sequence, tuple or struct
/// is expected as a sequence of u8 (ignoring bytes left over); rpcmux reads a bin only
/// as bytes. Told apart by rmp-serde refusing the input once every bin is a str (a
/// bytes field still reads a str; a sequence does not).
fn bin_read_as_sequence<T: DeserializeOwned>(buf: &[u8]) -> bool {
    let Ok(mut v) = rmpv::decode::read_value(&mut &buf[..]) else {
        return false;
    };
    if !bins_as_strs(&mut v) {
        return false;
    }
    let mut strs = Vec::new();
    rmpv::encode::write_value(&mut strs, &v).expect("writing to a Vec");
    rmp_read::<T>(&strs).is_err()
}

fn read<T: DeserializeOwned + Debug>(buf: &[u8]) {
    let mine = typed::from_slice::<T>(buf).map(|v| format!("{v:?}"));
    let theirs = rmp_read::<T>(buf).map(|v| format!("{v:?}"));
    match (&mine, &theirs) {
        (Ok(a), Ok(b)) if a == b => {}
        (Err(_), Err(_)) => {}
        (Err(_), Ok(_)) if bin_read_as_sequence::<T>(buf) => {}
        _ => panic!("{buf:02x?}: rpcmux {mine:?}, rmp-serde {theirs:?}"),
    }
}

fn write<T>(u: &mut Unstructured<'_>)
where
    T: Serialize + DeserializeOwned + Debug + for<'a> Arbitrary<'a>,
{
    let Ok(v) = T::arbitrary(u) else { return };
    let want = format!("{v:?}");
    let mut out = bytes::BytesMut::new();
    typed::write(&mut out, &v).unwrap_or_else(|e| panic!("{want} cannot be written: {e}"));
    let back = rmp_read::<T>(&out).unwrap_or_else(|e| panic!("{want} wrote {out:02x?}: {e}"));
    assert_eq!(format!("{back:?}"), want, "written as {out:02x?}");
    for theirs in [rmp_serde::to_vec_named(&v), rmp_serde::to_vec(&v)] {
        let theirs = theirs.expect("rmp-serde writes every shape");
        let back = typed::from_slice::<T>(&theirs)
            .unwrap_or_else(|e| panic!("rmp-serde wrote {want} as {theirs:02x?}: {e}"));
        assert_eq!(format!("{back:?}"), want, "rmp-serde wrote {theirs:02x?}");
    }
}

fn both<T>(rest: &[u8])
where
    T: Serialize + DeserializeOwned + Debug + for<'a> Arbitrary<'a>,
{
    read::<T>(rest);
    write::<T>(&mut Unstructured::new(rest));
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % SHAPES {
        0 => both::<Ints>(rest),
        1 => both::<Floats>(rest),
        2 => both::<Texts>(rest),
        3 => both::<Options>(rest),
        4 => both::<Shape>(rest),
        5 => both::<Nested>(rest),
        _ => both::<(bool, Vec<Shape>, Option<u64>, String)>(rest),
    }
});
