//! The envelope an event travels in between instances: one msgpack array
//! `[version, origin, seq, name, params]`.
//!
//! - `version` (1) lets a later rpcmux change the layout and an older one refuse it
//!   rather than misread it;
//! - `origin` and `seq` are the event's id ([`EventId`], given by the publishing
//!   instance's hub): an instance skips its own events when the engine echoes them back
//!   (it delivered them locally already), skips an event it has already delivered (the
//!   fan-out sends again after a broker restart: at-least-once on the wire), and counts
//!   a gap in one origin's sequence numbers as events it missed;
//! - `params` is the event's struct, `notify_time` included, so every instance hands
//!   subscribers the same values, timestamp and all.
//!
//! msgpack because it carries every [`Value`] exactly (bytes as bin, dateTime as the
//! timestamp extension, i64 whole), and the msgpack-rpc crate's reader is already built
//! for hostile input. Anything on the channel may be hostile (anyone who can reach the
//! Redis can publish), so decoding checks the size first, caps nesting, and refuses a
//! wrong shape, version or trailing bytes.

use crate::events::{Event, EventId};
use rpcmux_value::Value;

/// The layout written, and the only one read.
pub(crate) const VERSION: u64 = 1;

/// Containers an envelope's params may nest (the msgpack-rpc codec's default).
pub(crate) const MAX_DEPTH: usize = rpcmux_msgpack_rpc::Limits::DEFAULT_MAX_DEPTH;

/// Encode `event`, with its id, into `out`.
pub(crate) fn encode(out: &mut Vec<u8>, event: &Event) -> Result<(), String> {
    use rmp::encode as enc;
    let id = event.id();
    // Writing into a Vec cannot fail; only a value the model cannot hold can.
    let _ = enc::write_array_len(out, 5);
    let _ = enc::write_uint(out, VERSION);
    let _ = enc::write_uint(out, id.origin);
    let _ = enc::write_uint(out, id.seq);
    let _ = enc::write_str(out, &event.name);
    rpcmux_msgpack_rpc::write_value(out, &event.params).map_err(|e| e.to_string())
}

/// Decode an envelope of at most `max` bytes: the event, with its id.
pub(crate) fn decode(buf: &[u8], max: usize) -> Result<Event, String> {
    use rmp::decode as dec;
    if buf.len() > max {
        return Err(format!("{} bytes, over max_message ({max})", buf.len()));
    }
    let mut r = buf;
    let len = dec::read_array_len(&mut r).map_err(|_| "not a msgpack array")?;
    if len != 5 {
        return Err(format!("an array of {len}, not 5"));
    }
    let version: u64 = dec::read_int(&mut r).map_err(|_| "version is not an integer")?;
    if version != VERSION {
        return Err(format!("version {version}, this rpcmux reads {VERSION}"));
    }
    let origin: u64 = dec::read_int(&mut r).map_err(|_| "origin is not an integer")?;
    let seq: u64 = dec::read_int(&mut r).map_err(|_| "seq is not an integer")?;
    let name_len = dec::read_str_len(&mut r).map_err(|_| "name is not a string")? as usize;
    if name_len > r.len() {
        return Err("name truncated".into());
    }
    let (name, rest) = r.split_at(name_len);
    let name = std::str::from_utf8(name).map_err(|_| "name is not UTF-8")?;
    let (params, used) =
        rpcmux_msgpack_rpc::read_value(rest, MAX_DEPTH).map_err(|e| format!("params: {e}"))?;
    if used != rest.len() {
        return Err(format!("{} bytes after the envelope", rest.len() - used));
    }
    if !matches!(params, Value::Struct(_)) {
        return Err(format!("params is {}, not a struct", params.type_name()));
    }
    Ok(Event::new(name, params).with_id(EventId { origin, seq }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    fn event() -> Event {
        Event::new(
            "|virt|VM_status|42",
            vstruct! {
                "notify_time" => i64::MAX,
                "neg" => i64::MIN,
                "pi" => std::f64::consts::PI,
                "blob" => Value::Bytes(vec![0, 255, 1]),
                "nested" => Value::Array(vec![Value::Nil, true.into(), "é".into()]),
            },
        )
    }

    fn encoded(origin: u64, seq: u64) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, &event().with_id(EventId { origin, seq })).unwrap();
        out
    }

    #[test]
    fn round_trips_every_value_exactly() {
        let buf = encoded(u64::MAX, 7);
        let got = decode(&buf, 1 << 20).unwrap();
        assert_eq!(
            got.id(),
            EventId {
                origin: u64::MAX,
                seq: 7
            }
        );
        assert_eq!(got, event());
    }

    #[test]
    fn refuses_what_is_not_an_envelope() {
        let good = encoded(1, 1);
        assert!(decode(&good, good.len() - 1)
            .unwrap_err()
            .contains("max_message"));
        let mut trailing = good.clone();
        trailing.push(0xc0);
        assert!(decode(&trailing, 1 << 20).unwrap_err().contains("after"));
        assert!(
            decode(&good[..good.len() - 2], 1 << 20).is_err(),
            "truncated"
        );
        assert!(decode(b"hello", 1 << 20).is_err());
        assert!(decode(b"", 1 << 20).is_err());
        let mut v2 = good.clone();
        v2[1] = 2;
        assert!(decode(&v2, 1 << 20).unwrap_err().contains("version 2"));
        // Params nested past the cap.
        let mut deep = vec![0x95, 1, 1, 1, 0xa1, b'x'];
        deep.extend(std::iter::repeat_n(0x91, 10_000));
        deep.push(0xc0);
        assert!(decode(&deep, 1 << 20).is_err());
        // Params not a struct.
        let not_struct = [0x95, 1, 1, 1, 0xa1, b'x', 0x01];
        assert!(decode(&not_struct, 1 << 20)
            .unwrap_err()
            .contains("not a struct"));
        // A name longer than the bytes there.
        let long_name = [0x95, 1, 1, 1, 0xd9, 200, b'x'];
        assert!(decode(&long_name, 1 << 20).is_err());
    }
}
