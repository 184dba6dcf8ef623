//! What a probe answers.

/// A probe's verdict on a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// These bytes are this protocol's, whatever follows.
    Match,
    /// These bytes can never be this protocol's.
    NoMatch,
    /// Too few bytes to tell.
    NeedMore,
}

/// A probe: a pure function of the bytes seen so far, so it can be fuzzed and asked again
/// after every read.
pub type ProbeFn = fn(&[u8]) -> Probe;
