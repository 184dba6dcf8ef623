//! The caps a decoder enforces on what a peer may send.

/// Per-message caps. Both are checked while scanning, before a message is complete, so a
/// hostile peer can make the decoder buffer at most `max_message` bytes and open at most
/// `max_depth` containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest encoded message, in bytes (default 16 MiB, as for HTTP bodies).
    pub max_message: usize,
    /// Most containers open at once, counting the message array itself (default 64).
    pub max_depth: usize,
}

impl Limits {
    /// Default [`max_message`](Limits::max_message).
    pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;
    /// Default [`max_depth`](Limits::max_depth).
    pub const DEFAULT_MAX_DEPTH: usize = 64;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message: Self::DEFAULT_MAX_MESSAGE,
            max_depth: Self::DEFAULT_MAX_DEPTH,
        }
    }
}
