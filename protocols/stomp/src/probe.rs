//! The sniffer's question: does this connection speak STOMP?

use crate::Command;

/// A probe's answer about a prefix of a connection's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The bytes begin a STOMP client frame.
    Match,
    /// No continuation of these bytes can be a STOMP client frame.
    NoMatch,
    /// Both are still possible: read more.
    NeedMore,
}

/// Does `prefix` begin a STOMP client frame?
///
/// Accepts any client command (CONNECT, STOMP, SEND, SUBSCRIBE, UNSUBSCRIBE, ACK,
/// NACK, BEGIN, COMMIT, ABORT, DISCONNECT, so a client reconnecting mid-session is
/// recognised too), followed by `\n` or `\r\n`, after any number of heart-beat EOLs.
/// Answers as soon as the bytes decide it: `b"X"` is `NoMatch` at once, `b"CON"` and
/// `b"\n"` are `NeedMore`, `b"CONNECT\n"` is `Match`, `b"CONNECTX"` is `NoMatch`. Needs
/// at most 12 bytes past the leading EOLs; it never scans more.
pub fn probe_client_frame(prefix: &[u8]) -> Probe {
    let Some(rest) = skip_eols(prefix) else {
        return Probe::NoMatch;
    };
    if rest == b"\r" {
        // Half of a CRLF heart-beat.
        return Probe::NeedMore;
    }
    let mut verdict = Probe::NoMatch;
    for command in Command::CLIENT {
        match probe_command(rest, command.as_str().as_bytes()) {
            Probe::Match => return Probe::Match,
            Probe::NeedMore => verdict = Probe::NeedMore,
            Probe::NoMatch => {}
        }
    }
    verdict
}

/// Strip leading heart-beats (`\n` / `\r\n`). `None` if a CR is followed by anything
/// but LF, which no STOMP stream contains. A trailing lone CR is left in place.
fn skip_eols(mut bytes: &[u8]) -> Option<&[u8]> {
    loop {
        match bytes {
            [b'\n', rest @ ..] | [b'\r', b'\n', rest @ ..] => bytes = rest,
            [b'\r', _, ..] => return None,
            _ => return Some(bytes),
        }
    }
}

fn probe_command(bytes: &[u8], command: &[u8]) -> Probe {
    if bytes.len() < command.len() {
        return if command.starts_with(bytes) {
            Probe::NeedMore
        } else {
            Probe::NoMatch
        };
    }
    if !bytes.starts_with(command) {
        return Probe::NoMatch;
    }
    match &bytes[command.len()..] {
        [] | [b'\r'] => Probe::NeedMore,
        [b'\n', ..] | [b'\r', b'\n', ..] => Probe::Match,
        _ => Probe::NoMatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Probe::*;

    #[track_caller]
    fn check(bytes: &[u8], want: Probe) {
        assert_eq!(
            probe_client_frame(bytes),
            want,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }

    #[test]
    fn examples_from_the_design() {
        check(b"X", NoMatch);
        check(b"CON", NeedMore);
        check(b"CONNECT\n", Match);
        check(b"CONNECTX", NoMatch);
    }

    #[test]
    fn every_client_command_and_every_prefix() {
        for c in Command::CLIENT {
            for eol in [&b"\n"[..], b"\r\n"] {
                for lead in [&b""[..], b"\n", b"\r\n\n"] {
                    let full = [lead, c.as_str().as_bytes(), eol, b"host:x\n\n\0"].concat();
                    let decided = lead.len() + c.as_str().len() + eol.len();
                    for n in 0..decided {
                        check(&full[..n], NeedMore);
                    }
                    for n in decided..=full.len() {
                        check(&full[..n], Match);
                    }
                }
            }
        }
    }

    #[test]
    fn server_commands_and_lookalikes_do_not_match() {
        for bytes in [
            &b"CONNECTED\n"[..],
            b"MESSAGE\n",
            b"ERROR\n",
            b"RECEIPT\n",
            b"connect\n",
            b"SEND \n",
            b"SEND\rX",
            b"\rX",
            b"\r\rCONNECT\n",
            b"POST / HTTP/1.1\r\n",
            b"GET / HTTP/1.1\r\n",
            b"{\"jsonrpc\"",
            b"\x16\x03\x01",
            b"\x94\x00",
            b"PROXY TCP4",
            b" CONNECT\n",
        ] {
            check(bytes, NoMatch);
        }
    }

    #[test]
    fn undecided_prefixes() {
        for bytes in [
            &b""[..],
            b"\n",
            b"\r",
            b"\r\n\n\r",
            b"S",
            b"SUB",
            b"STOMP",
            b"STOMP\r",
        ] {
            check(bytes, NeedMore);
        }
        // "STOMP" vs "SEND" vs "SUBSCRIBE": decided on the second byte.
        check(b"SX", NoMatch);
        check(b"ABORT\r\n", Match);
        check(b"UNSUBSCRIBE\n", Match);
    }
}
