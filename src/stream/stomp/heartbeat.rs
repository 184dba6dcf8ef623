//! Heart-beats from the server's side: what to offer in CONNECTED, when to send an EOL,
//! when to give up on a silent peer.

use std::time::Duration;
use std::time::Instant;

/// No heart-beat interval is shorter than this, whatever the client asks: a client
/// asking for one every millisecond would otherwise cost a wake-up per millisecond.
/// (VDSM applies the same 1000 ms floor.)
pub(crate) const FLOOR_MS: u64 = 1000;

/// A peer silent for more than this many of its promised intervals is dead. The spec
/// leaves the margin to the receiver; 2× absorbs a late timer or a slow network.
const GRACE: u32 = 2;

/// What the server puts in CONNECTED's `heart-beat` for a client's `(cx, cy)`:
/// `(send_every, expect_every)` in ms, 0 = none.
///
/// The server can send at any interval, so it offers exactly what the client wants to
/// receive (`cy`), and wants to receive at the client's own pace (`cx`), both raised to
/// [`FLOOR_MS`]. Negotiating the client's values against this offer
/// ([`rpcmux_stomp::heartbeat_negotiate`]) gives back the offer itself, so the header
/// states the intervals both sides will really use.
pub(crate) fn offer((cx, cy): (u64, u64)) -> (u64, u64) {
    let floor = |ms: u64| if ms == 0 { 0 } else { ms.max(FLOOR_MS) };
    let offer = (floor(cy), floor(cx));
    debug_assert_eq!(rpcmux_stomp::heartbeat_negotiate((cx, cy), offer), offer);
    offer
}

/// Heart-beat timing of one connection after CONNECT.
#[derive(Debug)]
pub(crate) struct Beats {
    send_every: Option<Duration>,
    expect_every: Option<Duration>,
    /// When the server last wrote anything (any frame counts as a heart-beat).
    last_write: Instant,
}

/// What a tick decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Due {
    Nothing,
    /// Nothing was written for a send interval: write an EOL.
    Beat,
    /// The peer has been silent past its window.
    Dead {
        silent: Duration,
        every: Duration,
    },
}

impl Beats {
    /// From the negotiated `(send_every, expect_every)` ms (0 = off).
    pub(crate) fn new((send, expect): (u64, u64)) -> Beats {
        let ms = |v: u64| (v > 0).then(|| Duration::from_millis(v));
        Beats {
            send_every: ms(send),
            expect_every: ms(expect),
            last_write: Instant::now(),
        }
    }

    /// How often the driver should call [`Beats::tick`]: half the shorter interval, so
    /// an EOL goes out at most one send interval after the last write and a dead peer
    /// is noticed within half an interval of its window closing.
    pub(crate) fn tick_every(&self) -> Option<Duration> {
        let shorter = match (self.send_every, self.expect_every) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(shorter / 2)
    }

    /// Anything the server writes resets the send clock.
    pub(crate) fn wrote(&mut self, now: Instant) {
        self.last_write = now;
    }

    /// `idle_for` is how long ago the peer last sent a byte; `can_judge` is false while
    /// the server itself has stopped reading (backpressure), when silence proves nothing.
    pub(crate) fn tick(&mut self, now: Instant, idle_for: Duration, can_judge: bool) -> Due {
        if let Some(every) = self.expect_every {
            if can_judge && idle_for > every * GRACE {
                return Due::Dead {
                    silent: idle_for,
                    every,
                };
            }
        }
        match (self.send_every, self.tick_every()) {
            // Due when a further tick would be late: at most one interval between writes.
            (Some(every), Some(tick))
                if now.saturating_duration_since(self.last_write) + tick > every =>
            {
                self.wrote(now);
                Due::Beat
            }
            _ => Due::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_floors_and_keeps_zero() {
        assert_eq!(offer((0, 0)), (0, 0));
        assert_eq!(offer((10, 20)), (1000, 1000));
        assert_eq!(offer((5000, 0)), (0, 5000));
        assert_eq!(offer((0, 3000)), (3000, 0));
        assert_eq!(offer((30000, 10000)), (10000, 30000));
    }

    #[test]
    fn beats_when_quiet_and_judges_silence() {
        let mut b = Beats::new((1000, 1000));
        let t0 = b.last_write;
        let at = |ms| t0 + Duration::from_millis(ms);
        let ms = Duration::from_millis;
        assert_eq!(b.tick_every(), Some(ms(500)));
        assert_eq!(b.tick(at(400), ms(400), true), Due::Nothing);
        assert_eq!(b.tick(at(600), ms(600), true), Due::Beat);
        assert_eq!(b.tick(at(700), ms(700), true), Due::Nothing, "just beat");
        b.wrote(at(1500));
        assert_eq!(
            b.tick(at(1900), ms(100), true),
            Due::Nothing,
            "a frame is a beat"
        );
        let silent = ms(2001);
        assert_eq!(
            b.tick(at(2000), silent, false),
            Due::Nothing,
            "not while we do not read"
        );
        assert!(matches!(b.tick(at(2000), silent, true), Due::Dead { .. }));
    }

    #[test]
    fn off_means_no_ticks() {
        let b = Beats::new((0, 0));
        assert_eq!(b.tick_every(), None);
        let b = Beats::new((0, 4000));
        assert_eq!(b.tick_every(), Some(Duration::from_millis(2000)));
    }
}
