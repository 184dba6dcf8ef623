//! Output waiting for one stream connection: bytes written in place, and shared chunks.
//!
//! Replies and small frames are written into one buffer (`Deref` to [`BytesMut`], so a
//! framer writes as it always did). Bytes that several connections send alike (an
//! event encoded once for every subscriber) or that are too big to copy (a large reply)
//! go in as [`Bytes`] chunks, in order: 256 subscribers of an 8 MiB event hold one copy
//! of it and a few bytes of headers each, not 256 copies.
//!
//! [`Out::pending`] is everything not yet written (what the per-connection cap judges);
//! [`Out::owned`] is the memory this connection holds for itself, what its charge to the
//! output budget follows: the shared chunks left out (charged once, by their owner, when
//! they are encoded: see [`shared`]), and a chunk of its own counted *whole* until its
//! allocation is freed, not by the bytes still unsent. A big reply is one allocation,
//! sliced as it is written: counted by what was left to send, 200 slowly read 8 MiB
//! replies held 1,963 MB against a budget showing 191 MiB (issue 46). Once little of a
//! big chunk is left ([`TAIL`]), that tail is copied out and the allocation freed, so a
//! reader that is nearly done holds only the tail.

use crate::conn::budget::{Budget, Charge};
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A reply at least this big goes in as a chunk of its own instead of being copied.
const MOVE_AT: usize = 64 * 1024;

/// A chunk of this connection's own whose unsent rest is at most this (and less than
/// its allocation) is copied out, so its allocation can go (see the module doc).
const TAIL: usize = 16 * 1024;

/// Chunks handed to one vectored write.
const MAX_SLICES: usize = 16;

/// One connection's unsent output.
pub(crate) struct Out {
    /// Chunks, oldest first, all of them before `buf`.
    chunks: VecDeque<Chunk>,
    /// Bytes in `chunks`, and of those the shared ones.
    chunked: usize,
    shared: usize,
    /// What the connection's own chunks hold: each counted whole until it is dropped.
    owned_alloc: usize,
    buf: BytesMut,
    budget: Arc<Budget>,
}

/// One piece of output: bytes, whether other connections share them, and (for a chunk of
/// this connection's own) the length of the allocation it keeps alive until dropped.
struct Chunk {
    bytes: Bytes,
    shared: bool,
    alloc: usize,
}

impl Chunk {
    /// A chunk of `bytes` as pushed: one of this connection's own holds their length.
    fn new(bytes: Bytes, shared: bool) -> Chunk {
        let alloc = if shared { 0 } else { bytes.len() };
        Chunk {
            bytes,
            shared,
            alloc,
        }
    }
}

impl Deref for Out {
    type Target = BytesMut;
    fn deref(&self) -> &BytesMut {
        &self.buf
    }
}

impl DerefMut for Out {
    fn deref_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }
}

impl Out {
    /// Empty output; shared encodings made for it are charged to `budget`.
    pub(crate) fn new(budget: Arc<Budget>) -> Out {
        Out {
            chunks: VecDeque::new(),
            chunked: 0,
            shared: 0,
            owned_alloc: 0,
            buf: BytesMut::new(),
            budget,
        }
    }

    /// The process's output budget (for encodings shared among connections).
    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// Every byte not yet written.
    pub(crate) fn pending(&self) -> usize {
        self.chunked + self.buf.len()
    }

    /// Nothing waits to be written.
    pub(crate) fn is_done(&self) -> bool {
        self.chunked == 0 && self.buf.is_empty()
    }

    /// Memory held for this connection alone (shared chunks left out; a chunk of its
    /// own counted whole until freed: see the module doc).
    pub(crate) fn owned(&self) -> usize {
        self.owned_alloc + self.buf.len()
    }

    /// Memory the buffer holds, written or not (for giving it back).
    pub(crate) fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Append bytes other connections may send too (not copied).
    pub(crate) fn put_shared(&mut self, bytes: Bytes) {
        self.push(bytes, true);
    }

    /// Append an encoded reply: moved as a chunk when big (cut to its length first: a
    /// buffer grown by doubling holds up to twice what it is charged for), else copied.
    pub(crate) fn put_owned(&mut self, body: impl Reply) {
        if body.as_ref().len() >= MOVE_AT {
            self.push(body.into_exact(), false);
        } else {
            self.buf.extend_from_slice(body.as_ref());
        }
    }

    fn push(&mut self, bytes: Bytes, shared: bool) {
        if bytes.is_empty() {
            return;
        }
        self.push_chunk(Chunk::new(bytes, shared));
    }

    /// Append `c` after what `buf` holds (moved into a chunk of its own first), counting
    /// its bytes and, for one of this connection's own, its allocation.
    fn push_chunk(&mut self, c: Chunk) {
        if !self.buf.is_empty() {
            let head = self.buf.split().freeze();
            self.count_and_push(Chunk::new(head, false));
        }
        self.count_and_push(c);
    }

    fn count_and_push(&mut self, c: Chunk) {
        self.chunked += c.bytes.len();
        if c.shared {
            self.shared += c.bytes.len();
        }
        self.owned_alloc += c.alloc;
        self.chunks.push_back(c);
    }

    /// Move everything in `other` to the end of this output, in order.
    pub(crate) fn append(&mut self, other: &mut Out) {
        // Each chunk moved with what it holds: its allocation is counted here from now on.
        for c in other.chunks.drain(..) {
            self.push_chunk(c);
        }
        other.chunked = 0;
        other.shared = 0;
        other.owned_alloc = 0;
        if !other.buf.is_empty() {
            if self.chunks.is_empty() {
                self.buf.extend_from_slice(&other.buf);
                other.buf.clear();
            } else {
                let rest = other.buf.split().freeze();
                self.push(rest, false);
            }
        }
    }

    /// Up to [`MAX_SLICES`] slices of what waits, in order, for one vectored write.
    pub(crate) fn slices<'a>(&'a self, into: &mut Vec<IoSlice<'a>>) {
        into.clear();
        for c in self.chunks.iter().take(MAX_SLICES) {
            into.push(IoSlice::new(&c.bytes));
        }
        if into.len() < MAX_SLICES && !self.buf.is_empty() {
            into.push(IoSlice::new(&self.buf));
        }
    }

    /// The first contiguous piece of what waits.
    pub(crate) fn front(&self) -> &[u8] {
        match self.chunks.front() {
            Some(c) => &c.bytes,
            None => &self.buf,
        }
    }

    /// Whether what waits is in more than one piece (a vectored write helps).
    pub(crate) fn is_chunked(&self) -> bool {
        !self.chunks.is_empty()
    }

    /// `n` bytes were written.
    pub(crate) fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let Some(front) = self.chunks.front_mut() else {
                self.buf.advance(n);
                return;
            };
            let take = n.min(front.bytes.len());
            front.bytes.advance(take);
            self.chunked -= take;
            if front.shared {
                self.shared -= take;
            }
            n -= take;
            if front.bytes.is_empty() {
                self.owned_alloc -= front.alloc;
                self.chunks.pop_front();
            } else if !front.shared && front.bytes.len() <= TAIL && front.alloc > TAIL {
                // Nearly written: keep a copy of the rest, let the big allocation go.
                let rest = front.bytes.len();
                front.bytes = Bytes::copy_from_slice(&front.bytes);
                self.owned_alloc -= front.alloc - rest;
                front.alloc = rest;
            }
        }
    }

    /// Give the buffer's memory back (nothing may wait).
    pub(crate) fn release(&mut self) {
        debug_assert!(self.is_done());
        self.buf = BytesMut::new();
        self.chunks = VecDeque::new();
    }
}

/// An encoded reply moved into an [`Out`]: as `Bytes` holding no more than its length.
pub(crate) trait Reply: AsRef<[u8]> {
    fn into_exact(self) -> Bytes;
}

impl Reply for Vec<u8> {
    fn into_exact(self) -> Bytes {
        cut_to_length(self).into()
    }
}

impl Reply for bytes::BytesMut {
    fn into_exact(self) -> Bytes {
        // A `BytesMut` that owns its buffer becomes a `Vec` without a copy.
        cut_to_length(self.into()).into()
    }
}

impl Reply for Bytes {
    /// Already shared (a STOMP body sent to several subscriptions): not copied.
    fn into_exact(self) -> Bytes {
        self
    }
}

/// `bytes` without the spare capacity of a buffer grown by doubling, when it is more
/// than a sixteenth: what holds a reply is charged by its length, so its memory must be
/// that (a realloc that shrinks in place, not a copy, for big buffers).
pub(crate) fn cut_to_length(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.capacity() > bytes.len() + bytes.len() / 16 {
        bytes.shrink_to_fit();
    }
    bytes
}

/// Bytes several connections send alike, charged once to the output budget while any
/// connection still holds them (small ones are not charged: see [`crate::conn::budget::SMALL`]).
pub(crate) fn shared(bytes: impl Into<Vec<u8>>, budget: &Arc<Budget>) -> Bytes {
    let bytes: Vec<u8> = bytes.into();
    if bytes.len() <= crate::conn::budget::SMALL {
        return Bytes::from(bytes);
    }
    Bytes::from_owner(Charged::new(bytes, budget))
}

impl Charged {
    /// `bytes`, charged by the memory they hold: an event encoded into a buffer grown by
    /// doubling is first cut to its length, as a reply is (uncut, an 8 MiB event's
    /// encoding held up to 16 MiB against its 8 MiB charge).
    fn new(bytes: Vec<u8>, budget: &Arc<Budget>) -> Charged {
        let bytes = cut_to_length(bytes);
        let charge = budget.charge(bytes.len());
        Charged {
            bytes,
            _charge: charge,
        }
    }
}

/// Encoded bytes and the budget charge they hold until the last holder drops them.
struct Charged {
    bytes: Vec<u8>,
    _charge: Charge,
}

impl AsRef<[u8]> for Charged {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_bytes_hold_about_what_they_are_charged() {
        let budget = Budget::new(1 << 30);
        let len = 3 * crate::conn::budget::SMALL;
        // As an encoder leaves a buffer: grown by doubling past its length.
        let mut grown = Vec::with_capacity(128);
        for i in 0..len {
            grown.push(i as u8);
        }
        assert!(grown.capacity() >= len + len / 8, "{}", grown.capacity());
        let held = Charged::new(grown, &budget);
        assert_eq!(budget.used(), len);
        assert!(
            held.bytes.capacity() <= len + len / 16,
            "{} bytes held for a charge of {len}",
            held.bytes.capacity()
        );
    }

    fn collect(out: &Out) -> Vec<u8> {
        let mut v = Vec::new();
        for c in &out.chunks {
            v.extend_from_slice(&c.bytes);
        }
        v.extend_from_slice(&out.buf);
        v
    }

    #[test]
    fn order_is_kept_across_buffer_and_chunks() {
        let budget = Budget::new(1 << 20);
        let mut out = Out::new(budget.clone());
        out.extend_from_slice(b"head:");
        out.put_shared(Bytes::from_static(b"SHARED"));
        out.extend_from_slice(b"\0");
        out.put_owned(vec![b'x'; MOVE_AT]);
        out.extend_from_slice(b"tail");
        assert_eq!(out.pending(), 5 + 6 + 1 + MOVE_AT + 4);
        assert_eq!(out.owned(), out.pending() - 6);
        let all = collect(&out);
        assert!(all.starts_with(b"head:SHARED\0xx"));
        assert!(all.ends_with(b"xxtail"));
        // Written in odd steps, the bytes come out in the same order.
        let mut written = Vec::new();
        while !out.is_done() {
            let n = out.front().len().min(7);
            written.extend_from_slice(&out.front()[..n]);
            out.advance(n);
        }
        assert_eq!(written, all);
        assert_eq!(out.owned(), 0);
    }

    #[test]
    fn a_big_reply_is_counted_whole_until_its_allocation_goes() {
        let budget = Budget::new(1 << 30);
        let mut out = Out::new(budget);
        let len = 8 * MOVE_AT;
        out.put_owned(vec![b'r'; len]);
        assert_eq!(out.owned(), len);
        // A slow reader takes 1 KiB at a time: the allocation is all still there.
        for _ in 0..10 {
            out.advance(1024);
            assert_eq!(out.owned(), len, "counted by its allocation, not its rest");
        }
        // Nearly done: the tail is copied out and the allocation freed.
        let rest = out.pending();
        out.advance(rest - TAIL);
        assert_eq!(out.owned(), TAIL);
        assert_eq!(out.pending(), TAIL);
        out.advance(TAIL);
        assert_eq!(out.owned(), 0);
        assert!(out.is_done());
    }

    #[test]
    fn a_shared_encoding_is_charged_once_until_its_last_holder_drops_it() {
        let budget = Budget::new(1 << 30);
        let big = shared(vec![7u8; 1 << 20], &budget);
        assert_eq!(budget.used(), 1 << 20);
        let mut outs: Vec<Out> = (0..64).map(|_| Out::new(budget.clone())).collect();
        for o in &mut outs {
            o.put_shared(big.clone());
        }
        drop(big);
        assert_eq!(budget.used(), 1 << 20, "one charge for 64 holders");
        assert!(outs
            .iter()
            .all(|o| o.owned() == 0 && o.pending() == 1 << 20));
        outs.truncate(1);
        assert_eq!(budget.used(), 1 << 20);
        outs.clear();
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_big_reply_is_kept_by_its_length_not_its_buffer() {
        let mut body = Vec::with_capacity(4 * MOVE_AT);
        body.extend(std::iter::repeat_n(b'r', MOVE_AT + 1));
        let body = cut_to_length(body);
        assert!(body.capacity() <= MOVE_AT + 1 + (MOVE_AT + 1) / 16);
        let mut almost = Vec::with_capacity(1000);
        almost.extend([1u8; 990]);
        assert_eq!(
            cut_to_length(almost).capacity(),
            1000,
            "a little spare is kept"
        );
    }

    #[test]
    fn append_moves_another_output_in_order() {
        let budget = Budget::new(1 << 20);
        let mut a = Out::new(budget.clone());
        let mut b = Out::new(budget);
        a.extend_from_slice(b"1");
        b.extend_from_slice(b"2");
        b.put_shared(Bytes::from_static(b"3"));
        b.extend_from_slice(b"4");
        a.append(&mut b);
        assert!(b.is_done());
        assert_eq!(collect(&a), b"1234");
        assert_eq!(a.owned(), 3);
        assert_eq!(b.owned(), 0);
    }
}
