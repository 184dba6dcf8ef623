//! The opening handshake's accept key (RFC 6455 section 4.2.2).

use base64::Engine;
use sha1::{Digest, Sha1};

/// The GUID every accept key is derived with.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`: what a server answers in
/// its 101, and what a client checks it got. Two lines over sha1 and base64 rather than
/// tungstenite's copy of them, which would bring its http types along.
pub fn accept_key(key: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(key);
    h.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6455_sample_key() {
        assert_eq!(
            accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
