//! Strings shorter than 32 bytes (msgpack's fixstrs: struct keys and most values) copied
//! inline. A libc `memcpy` call, with its length dispatch, cost more than the few bytes
//! it copies, once per string on both the encoding and the typed decoding path.

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
