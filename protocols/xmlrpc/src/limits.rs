//! Caps on what one XML-RPC document may make the parser build.
//!
//! The HTTP layer caps the body size; these caps bound what a body of that size can
//! still cost: recursion-like nesting, the number of nodes, and one huge string.

/// Parser limits. Exceeding any of them is an invalid request (-32600) that names the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How many arrays/structs may nest inside one another. A scalar parameter has
    /// depth 0; `[[1]]` has depth 2. The parser itself is iterative and never runs out
    /// of stack, but dropping a `Value` and writing one recurse, so keep this modest
    /// (the default allows far more than any real payload needs).
    pub max_depth: usize,
    /// How many XML elements (every start tag, `<value>` included) one document may hold.
    pub max_elements: usize,
    /// The longest decoded text in bytes: a string, a member name, a method name, or
    /// the base64 text of a binary.
    pub max_string: usize,
}

impl Limits {
    /// The defaults, usable in a `const`.
    pub const DEFAULT: Limits = Limits {
        max_depth: 64,
        max_elements: 1_000_000,
        max_string: 16 * 1024 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
