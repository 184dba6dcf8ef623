//! The frames the server sends, built in one place so their headers stay consistent.

use crate::conn::out::Out;
use bytes::{Bytes, BytesMut};
use rpcmux_stomp::{encode_frame, encode_frame_head, Command, Frame};

/// The `server` header of CONNECTED.
const SERVER: &str = concat!("rpcmux/", env!("CARGO_PKG_VERSION"));

/// CONNECTED for a session, with the heart-beat intervals both sides will use.
pub(crate) fn connected(session: u64, (send, expect): (u64, u64)) -> Frame {
    Frame::new(Command::Connected)
        .header("version", "1.2")
        .header("heart-beat", format!("{send},{expect}"))
        .header("server", SERVER)
        .header("session", session.to_string())
}

pub(crate) fn receipt(id: &str) -> Frame {
    Frame::new(Command::Receipt).header("receipt-id", id)
}

/// ERROR with a one-line `message`, echoing the offending frame's `receipt` as
/// `receipt-id` (the spec's way to say which frame failed), and the text as body.
pub(crate) fn error(message: &str, receipt: Option<&str>) -> Frame {
    let mut f = Frame::new(Command::Error).header("message", message);
    if let Some(r) = receipt {
        f.push_header("receipt-id", r);
    }
    f.header("content-type", "text/plain")
        .with_body(format!("{message}\n"))
}

/// A JSON body delivered to one subscription: the MESSAGE head written here, the body
/// appended without a copy when big (`shared`: bytes other connections send too, an
/// event's encoding), then the NUL that ends the frame.
/// An event's MESSAGE carries its id as `event-id` (for `since` on a later SUBSCRIBE).
pub(crate) fn put_message(
    destination: &str,
    subscription: &str,
    message_id: &str,
    body: &Bytes,
    shared: bool,
    event_id: Option<&str>,
    out: &mut Out,
) {
    let mut head = Frame::new(Command::Message)
        .header("destination", destination)
        .header("subscription", subscription)
        .header("message-id", message_id)
        .header("content-type", "application/json");
    if let Some(id) = event_id {
        head.push_header("event-id", id);
    }
    if let Err(e) = encode_frame_head(&head, body.len(), out) {
        tracing::error!(error = %e, "cannot encode a STOMP MESSAGE; dropped");
        return;
    }
    if shared {
        out.put_shared(body.clone());
    } else {
        out.put_owned(body.clone());
    }
    out.extend_from_slice(b"\0");
}

/// Append `frame` to `out`. Only an empty or NUL-bearing header can fail to encode,
/// which the decoder never produces; log rather than corrupt the stream.
pub(crate) fn put(frame: &Frame, out: &mut BytesMut) {
    if let Err(e) = encode_frame(frame, out) {
        tracing::error!(command = %frame.command, error = %e, "cannot encode a STOMP frame; dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_echoes_receipt() {
        let f = error("bad: frame", Some("r-1"));
        assert_eq!(f.get("message"), Some("bad: frame"));
        assert_eq!(f.get("receipt-id"), Some("r-1"));
        let mut out = BytesMut::new();
        put(&f, &mut out);
        assert!(out.starts_with(b"ERROR\nmessage:bad\\c frame\nreceipt-id:r-1\n"));
    }

    #[test]
    fn connected_states_intervals() {
        let f = connected(7, (1000, 0));
        assert_eq!(f.get("version"), Some("1.2"));
        assert_eq!(f.get("heart-beat"), Some("1000,0"));
        assert!(f.get("server").unwrap().starts_with("rpcmux/"));
    }
}
