//! The fifteen STOMP 1.2 commands.

use std::fmt;
use std::str::FromStr;

/// A STOMP 1.2 frame command. Commands are case-sensitive on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    // client → server
    /// Open a session (STOMP 1.0 name).
    Connect,
    /// Open a session (STOMP 1.2 name, same meaning).
    Stomp,
    /// Deliver a message to a destination.
    Send,
    /// Ask for a destination's messages.
    Subscribe,
    /// Stop a subscription.
    Unsubscribe,
    /// Acknowledge a message.
    Ack,
    /// Reject a message.
    Nack,
    /// Start a transaction.
    Begin,
    /// Commit a transaction.
    Commit,
    /// Roll back a transaction.
    Abort,
    /// End the session.
    Disconnect,
    // server → client
    /// The session is open.
    Connected,
    /// A message from a subscription.
    Message,
    /// The answer to a `receipt` header.
    Receipt,
    /// Something went wrong; the server closes after it.
    Error,
}

impl Command {
    /// Every command, client commands first (the order of [`Command::CLIENT`]).
    pub const ALL: [Command; 15] = [
        Command::Connect,
        Command::Stomp,
        Command::Send,
        Command::Subscribe,
        Command::Unsubscribe,
        Command::Ack,
        Command::Nack,
        Command::Begin,
        Command::Commit,
        Command::Abort,
        Command::Disconnect,
        Command::Connected,
        Command::Message,
        Command::Receipt,
        Command::Error,
    ];

    /// The commands a client may send (what the sniffer looks for).
    pub const CLIENT: [Command; 11] = [
        Command::Connect,
        Command::Stomp,
        Command::Send,
        Command::Subscribe,
        Command::Unsubscribe,
        Command::Ack,
        Command::Nack,
        Command::Begin,
        Command::Commit,
        Command::Abort,
        Command::Disconnect,
    ];

    /// The longest command name ("UNSUBSCRIBE"): a command line longer than this
    /// (plus an optional CR) cannot be valid, so the decoder need not wait for its LF.
    pub const MAX_LEN: usize = 11;

    /// The command as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Command::Connect => "CONNECT",
            Command::Stomp => "STOMP",
            Command::Send => "SEND",
            Command::Subscribe => "SUBSCRIBE",
            Command::Unsubscribe => "UNSUBSCRIBE",
            Command::Ack => "ACK",
            Command::Nack => "NACK",
            Command::Begin => "BEGIN",
            Command::Commit => "COMMIT",
            Command::Abort => "ABORT",
            Command::Disconnect => "DISCONNECT",
            Command::Connected => "CONNECTED",
            Command::Message => "MESSAGE",
            Command::Receipt => "RECEIPT",
            Command::Error => "ERROR",
        }
    }

    /// Parse a command line (without its EOL). Exact, case-sensitive match.
    pub fn parse(bytes: &[u8]) -> Option<Command> {
        // A match on byte strings compiles to length + memcmp checks: no allocation,
        // no UTF-8 validation, and garbage is refused without a table walk.
        Some(match bytes {
            b"CONNECT" => Command::Connect,
            b"STOMP" => Command::Stomp,
            b"SEND" => Command::Send,
            b"SUBSCRIBE" => Command::Subscribe,
            b"UNSUBSCRIBE" => Command::Unsubscribe,
            b"ACK" => Command::Ack,
            b"NACK" => Command::Nack,
            b"BEGIN" => Command::Begin,
            b"COMMIT" => Command::Commit,
            b"ABORT" => Command::Abort,
            b"DISCONNECT" => Command::Disconnect,
            b"CONNECTED" => Command::Connected,
            b"MESSAGE" => Command::Message,
            b"RECEIPT" => Command::Receipt,
            b"ERROR" => Command::Error,
            _ => return None,
        })
    }

    /// Whether a client sends this command (as opposed to a server).
    pub const fn is_client(self) -> bool {
        !matches!(
            self,
            Command::Connected | Command::Message | Command::Receipt | Command::Error
        )
    }

    /// Whether header names and values of this frame use `\c \n \r \\` escapes.
    ///
    /// The spec exempts CONNECT and CONNECTED "to remain backward compatible with
    /// STOMP 1.0 clients"; STOMP is the 1.2 spelling of CONNECT and is exempt too
    /// (stomp.py escapes neither, so a `passcode:pa:ss` arrives with a raw colon).
    pub const fn escapes_headers(self) -> bool {
        !matches!(self, Command::Connect | Command::Stomp | Command::Connected)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Returned by [`Command::from_str`] for an unknown command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCommand;

impl fmt::Display for UnknownCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown STOMP command")
    }
}

impl std::error::Error for UnknownCommand {}

impl FromStr for Command {
    type Err = UnknownCommand;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Command::parse(s.as_bytes()).ok_or(UnknownCommand)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_command() {
        for c in Command::ALL {
            assert_eq!(Command::parse(c.as_str().as_bytes()), Some(c));
            assert_eq!(c.as_str().parse::<Command>(), Ok(c));
            assert!(c.as_str().len() <= Command::MAX_LEN);
        }
        for c in Command::CLIENT {
            assert!(c.is_client());
        }
        assert_eq!(Command::ALL.iter().filter(|c| c.is_client()).count(), 11);
    }

    #[test]
    fn case_sensitive_and_exact() {
        for bad in [&b"send"[..], b"SEND ", b" SEND", b"SENDX", b"", b"CONNECTE"] {
            assert_eq!(Command::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn escaping_exemptions() {
        assert!(!Command::Connect.escapes_headers());
        assert!(!Command::Stomp.escapes_headers());
        assert!(!Command::Connected.escapes_headers());
        assert!(Command::Send.escapes_headers());
        assert!(Command::Error.escapes_headers());
    }
}
