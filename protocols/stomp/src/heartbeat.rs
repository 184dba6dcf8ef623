//! The `heart-beat` header: parsing and negotiation.
//!
//! Each side sends `heart-beat:<x>,<y>`: `x` is the smallest interval (ms) at which it
//! can send heart-beats (0: cannot), `y` the interval it would like to receive them at
//! (0: does not want them).

use crate::error::{snippet, StompError};

/// Parse a `heart-beat` header value `"x,y"` (milliseconds). Spaces around either
/// number are tolerated; anything else (signs, missing comma, overflow) is refused.
pub fn parse_heartbeat(value: &str) -> Result<(u64, u64), StompError> {
    let bad = || {
        StompError::BadHeader(format!(
            "heart-beat must be two comma-separated millisecond counts, got {}",
            snippet(value.as_bytes())
        ))
    };
    let (x, y) = value.split_once(',').ok_or_else(bad)?;
    let num = |s: &str| -> Result<u64, StompError> {
        let s = s.trim_matches(' ');
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    Ok((num(x)?, num(y)?))
}

/// Negotiate heart-beats from the server's side.
///
/// `client` is the client's `(cx, cy)` from CONNECT (`(0, 0)` when absent); `server` is
/// the `(sx, sy)` the server puts in CONNECTED. Returns `(send_every_ms,
/// expect_every_ms)`, 0 meaning none:
/// - the server sends every `max(sx, cy)` ms, unless `sx` or `cy` is 0;
/// - the client sends every `max(cx, sy)` ms, unless `cx` or `sy` is 0; that is the
///   interval the server should expect. The spec leaves the grace margin to the
///   receiver ("because of timing inaccuracies, the receiver SHOULD be tolerant"), so
///   the caller adds it before declaring the peer dead.
///
/// For a client's view, swap the arguments: `heartbeat_negotiate(server, client)`.
pub fn heartbeat_negotiate(client: (u64, u64), server: (u64, u64)) -> (u64, u64) {
    let (cx, cy) = client;
    let (sx, sy) = server;
    let every = |can: u64, want: u64| {
        if can == 0 || want == 0 {
            0
        } else {
            can.max(want)
        }
    };
    (every(sx, cy), every(cx, sy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        assert_eq!(parse_heartbeat("0,0").unwrap(), (0, 0));
        assert_eq!(parse_heartbeat("1000,2500").unwrap(), (1000, 2500));
        assert_eq!(parse_heartbeat(" 10 , 20 ").unwrap(), (10, 20));
        for bad in [
            "",
            "0",
            ",",
            "1,",
            ",1",
            "1,2,3",
            "-1,0",
            "+1,0",
            "a,b",
            "1;2",
            "99999999999999999999999,0",
        ] {
            assert!(parse_heartbeat(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn negotiate_per_spec() {
        // Spec example shape: client can send every 1000, wants every 5000; server can
        // send every 1000 and wants every 2000.
        assert_eq!(
            heartbeat_negotiate((1000, 5000), (1000, 2000)),
            (5000, 2000)
        );
        // Either side saying 0 switches that direction off.
        assert_eq!(heartbeat_negotiate((0, 0), (1000, 1000)), (0, 0));
        assert_eq!(heartbeat_negotiate((0, 3000), (1000, 1000)), (3000, 0));
        assert_eq!(heartbeat_negotiate((3000, 0), (1000, 1000)), (0, 3000));
        assert_eq!(heartbeat_negotiate((3000, 4000), (0, 0)), (0, 0));
        // stomp.py heartbeats=(1000, 1000) against a server floor of 1000.
        assert_eq!(
            heartbeat_negotiate((1000, 1000), (1000, 1000)),
            (1000, 1000)
        );
    }
}
