//! An HTTP/2 reply's `content-length` without an allocation.
//!
//! hyper's HTTP/2 server adds `content-length` to a reply of known size by formatting
//! it into a fresh buffer (`HeaderValue::from(u64)`): one allocation per reply (HTTP/1.1
//! writes the length into its head buffer instead). The decimal text of every length
//! below [`UP_TO`] is kept in one table, made once, and a reply's header value points
//! into it (`HeaderValue::from_static`, no copy); a longer reply's is formatted as
//! before.

use hyper::header::{HeaderMap, HeaderValue, CONTENT_LENGTH};
use std::sync::LazyLock;

/// Lengths served from the table: below 10,000, four bytes each (40,000 bytes).
const UP_TO: u64 = 10_000;
const WIDTH: usize = 4;

/// Every length below [`UP_TO`] in decimal, each in a [`WIDTH`]-byte slot, left-aligned.
static DIGITS: LazyLock<String> = LazyLock::new(|| {
    use std::fmt::Write as _;
    let mut all = String::with_capacity(UP_TO as usize * WIDTH);
    for n in 0..UP_TO {
        let _ = write!(all, "{n:<WIDTH$}");
    }
    all
});

/// The header value saying `len`.
fn value(len: u64) -> HeaderValue {
    if len >= UP_TO {
        return HeaderValue::from(len);
    }
    let table: &'static str = DIGITS.as_str();
    let digits = len.checked_ilog10().unwrap_or(0) as usize + 1;
    let at = len as usize * WIDTH;
    HeaderValue::from_static(&table[at..at + digits])
}

/// Say `len` as the reply's `content-length`, unless it says one already.
pub(super) fn set(headers: &mut HeaderMap, len: Option<u64>) {
    if let Some(len) = len {
        if !headers.contains_key(CONTENT_LENGTH) {
            headers.insert(CONTENT_LENGTH, value(len));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_reads_as_itself() {
        for len in (0..12_000).chain([u64::MAX, 1 << 40]) {
            assert_eq!(value(len).to_str().unwrap(), len.to_string(), "{len}");
        }
    }

    #[test]
    fn a_length_already_said_is_kept() {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_LENGTH, HeaderValue::from_static("7"));
        set(&mut h, Some(9));
        assert_eq!(h[CONTENT_LENGTH], "7");
        let mut h = HeaderMap::new();
        set(&mut h, None);
        assert!(h.is_empty());
        set(&mut h, Some(1234));
        assert_eq!(h[CONTENT_LENGTH], "1234");
    }
}
