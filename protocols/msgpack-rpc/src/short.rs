//! Strings shorter than 32 bytes (msgpack's fixstrs: struct keys and most values) checked
//! and copied inline. A libc `memcpy` call, with its length dispatch, cost more than the
//! few bytes it copies, once per string on both the encoding and the typed decoding path;
//! std's ASCII and UTF-8 checks walk a short string's tail a byte at a time.

/// An owned copy of a string shorter than 32 bytes (a fixstr's), copied inline.
#[inline]
pub(crate) fn short_string(s: &str) -> String {
    let n = s.len();
    assert!(n < 32, "short_string takes fixstr lengths");
    let mut bytes = Vec::with_capacity(n);
    // SAFETY: `bytes` has room for `n` bytes, all written before they are counted in;
    // they are `s`'s, so UTF-8.
    unsafe {
        copy_short(s.as_ptr(), bytes.as_mut_ptr(), n);
        bytes.set_len(n);
        String::from_utf8_unchecked(bytes)
    }
}

/// Copy `n < 32` bytes with at most four unaligned loads and stores (overlapping when
/// `n` is not a power of two), inline: what `memcpy` does for short lengths, without
/// the call and its length dispatch.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and they must not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_short(src: *const u8, dst: *mut u8, n: usize) {
    debug_assert!(n < 32);
    // SAFETY (each arm): every offset read or written is below `n`.
    unsafe {
        if n >= 16 {
            let (a, b) = (src.cast::<[u8; 16]>(), src.add(n - 16).cast::<[u8; 16]>());
            let (a, b) = (a.read_unaligned(), b.read_unaligned());
            dst.cast::<[u8; 16]>().write_unaligned(a);
            dst.add(n - 16).cast::<[u8; 16]>().write_unaligned(b);
        } else if n >= 8 {
            let (a, b) = (src.cast::<u64>(), src.add(n - 8).cast::<u64>());
            let (a, b) = (a.read_unaligned(), b.read_unaligned());
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let (a, b) = (src.cast::<u32>(), src.add(n - 4).cast::<u32>());
            let (a, b) = (a.read_unaligned(), b.read_unaligned());
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else if n > 0 {
            *dst = *src;
            *dst.add(n / 2) = *src.add(n / 2);
            *dst.add(n - 1) = *src.add(n - 1);
        }
    }
}

/// `raw` as a str if it is UTF-8. A string shorter than 32 bytes (every struct key and
/// most values) that is ASCII is found so with at most four loads and no loop: std's
/// `is_ascii` checks the tail a byte at a time, a loop run a different number of times
/// for each key, whose mispredicted exit was 4 % of a typed call's decoding.
#[inline(always)]
pub(crate) fn utf8(raw: &[u8]) -> Option<&str> {
    let ascii = if raw.len() < 32 {
        is_ascii_short(raw)
    } else {
        raw.is_ascii()
    };
    if ascii {
        // SAFETY: ASCII is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(raw) });
    }
    std::str::from_utf8(raw).ok()
}

/// Whether `s`, shorter than 32 bytes, is ASCII: the same overlapping loads as
/// [`copy_short`], or'ed together, with no byte's high bit set.
#[inline(always)]
fn is_ascii_short(s: &[u8]) -> bool {
    let n = s.len();
    debug_assert!(n < 32);
    let p = s.as_ptr();
    // SAFETY (each arm): every offset read is below `n`.
    unsafe {
        if n >= 16 {
            let a = p.cast::<u128>().read_unaligned();
            let b = p.add(n - 16).cast::<u128>().read_unaligned();
            (a | b) & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0
        } else if n >= 8 {
            let a = p.cast::<u64>().read_unaligned();
            let b = p.add(n - 8).cast::<u64>().read_unaligned();
            (a | b) & 0x8080_8080_8080_8080 == 0
        } else if n >= 4 {
            let a = p.cast::<u32>().read_unaligned();
            let b = p.add(n - 4).cast::<u32>().read_unaligned();
            (a | b) & 0x8080_8080 == 0
        } else if n > 0 {
            (*p | *p.add(n / 2) | *p.add(n - 1)) & 0x80 == 0
        } else {
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length up to 40 (both sides of the short path's 32), with a non-ASCII byte
    /// at each position, and valid multi-byte UTF-8 at each short length.
    #[test]
    fn utf8_agrees_with_std_at_every_length_and_position() {
        for n in 0..40 {
            let ascii = vec![b'a'; n];
            assert_eq!(utf8(&ascii), std::str::from_utf8(&ascii).ok(), "len {n}");
            for at in 0..n {
                let mut bad = ascii.clone();
                bad[at] = 0xff;
                assert_eq!(utf8(&bad), None, "len {n}, 0xff at {at}");
                if at + 1 < n {
                    let mut two = ascii.clone();
                    two[at..at + 2].copy_from_slice("é".as_bytes());
                    assert_eq!(utf8(&two), Some(std::str::from_utf8(&two).unwrap()));
                }
            }
        }
    }
}
