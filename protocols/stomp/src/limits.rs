//! Size caps the decoder enforces while it reads.

/// Caps on what one incoming frame may hold. Each is checked as bytes arrive, so a peer
/// that never sends the terminating LF or NUL is refused once it passes the cap, and the
/// read buffer never holds much more than `max_frame` bytes of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one frame: command line, header lines and body (EOLs and the NUL
    /// included). Default 16 MiB, the same as the HTTP body cap.
    pub max_frame: usize,
    /// Header lines in one frame, repeats included. Default 64.
    pub max_headers: usize,
    /// Bytes of one header line, without its EOL, as on the wire (before unescaping).
    /// Default 8 KiB.
    pub max_header_line: usize,
}

impl Limits {
    /// Default [`max_frame`](Limits::max_frame): 16 MiB, as for HTTP bodies.
    pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;
    /// Default [`max_headers`](Limits::max_headers).
    pub const DEFAULT_MAX_HEADERS: usize = 64;
    /// Default [`max_header_line`](Limits::max_header_line).
    pub const DEFAULT_MAX_HEADER_LINE: usize = 8 * 1024;
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_frame: Limits::DEFAULT_MAX_FRAME,
            max_headers: Limits::DEFAULT_MAX_HEADERS,
            max_header_line: Limits::DEFAULT_MAX_HEADER_LINE,
        }
    }
}
