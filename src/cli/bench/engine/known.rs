//! `--check-bytes`: checking an answer by its bytes. Once one answer has been decoded
//! and found right, a later answer with the same bytes (its id aside) is right too, and
//! is taken without being decoded again; one that differs in any byte is decoded and
//! judged in full.
//!
//! Decoding each answer into a `Value` and comparing it member by member is more than
//! half of the load generator's time on MusicEntry: with it, a fast server waits on the
//! generator and is measured below its full core (paying wake-ups a busy server does
//! not). This lighter check measures servers at their full core instead.

/// A right answer's bytes, with where its id sits.
pub(crate) struct KnownAnswer {
    bytes: Vec<u8>,
    id_at: usize,
    id_form: IdForm,
}

/// What the bytes at the front of a buffer are, against the known answer.
#[derive(Debug, PartialEq)]
pub(crate) enum Check {
    /// The known answer with this id: `len` bytes.
    Same { id: u32, len: usize },
    /// So far the known answer's first bytes: wait for the rest (the formats are
    /// self-delimiting, so no whole message is a proper prefix of another).
    Prefix,
    /// Something else: decode it.
    Differs,
}

impl KnownAnswer {
    /// `frame`: one whole answer that was decoded and found right, to call `id`. `None`
    /// when the id is not in its bytes exactly once in `id_form`.
    pub(crate) fn learn(frame: &[u8], id: u32, id_form: IdForm) -> Option<KnownAnswer> {
        let id_at = id_form.find_once(frame, id)?;
        Some(KnownAnswer {
            bytes: frame.to_vec(),
            id_at,
            id_form,
        })
    }

    /// Compare the front of `buf` with the known answer.
    pub(crate) fn check(&self, buf: &[u8]) -> Check {
        let k = &self.bytes;
        let id_end = self.id_at + self.id_form.width();
        if buf.len() < k.len() {
            // Only the bytes present; the id's may be any digits.
            let n = buf.len();
            let head = n.min(self.id_at);
            let tail_from = id_end.min(n);
            return if buf[..head] == k[..head] && buf[tail_from..] == k[tail_from..n] {
                Check::Prefix
            } else {
                Check::Differs
            };
        }
        if buf[..self.id_at] != k[..self.id_at] || buf[id_end..k.len()] != k[id_end..] {
            return Check::Differs;
        }
        match self.id_form.read(&buf[self.id_at..id_end]) {
            Some(id) => Check::Same { id, len: k.len() },
            None => Check::Differs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_taken_by_their_bytes_and_anything_else_is_decoded() {
        let right = br#"{"id":1000000019,"result":[1,2]}"#;
        let k = KnownAnswer::learn(right, 1_000_000_019, IdForm::Decimal10).unwrap();
        let other_id = br#"{"id":1000000020,"result":[1,2]}"#;
        let same = Check::Same {
            id: 1_000_000_020,
            len: right.len(),
        };
        assert_eq!(k.check(other_id), same);
        // The next answer's bytes after it are left alone.
        let mut two = other_id.to_vec();
        two.extend_from_slice(b"{\"id\"");
        assert_eq!(k.check(&two), same);
        // A different result, an error, an id that is not digits: decoded instead.
        let differs = [
            &br#"{"id":1000000020,"result":[1,3]}"#[..],
            br#"{"id":1000000020,"error":{"code":1}}"#,
            br#"{"id":10000000x0,"result":[1,2]}"#,
        ];
        for d in differs {
            assert_eq!(k.check(d), Check::Differs, "{}", String::from_utf8_lossy(d));
        }
        // Part of it: wait for the rest, unless what is there already differs.
        assert_eq!(k.check(&other_id[..10]), Check::Prefix);
        assert_eq!(k.check(&other_id[..20]), Check::Prefix);
        assert_eq!(k.check(b""), Check::Prefix);
        assert_eq!(k.check(br#"{"id":1000000020,"e"#), Check::Differs);
        assert_eq!(k.check(br#"{"x"#), Check::Differs);

        // msgpack: the id as a uint32 after its marker.
        let mp = [0x94, 1, 0xce, 0x3b, 0x9a, 0xca, 0x13, 0xc0, 0x01];
        let k = KnownAnswer::learn(&mp, 1_000_000_019, IdForm::U32Be).unwrap();
        let mut next = mp;
        next[3..7].copy_from_slice(&1_000_000_020u32.to_be_bytes());
        let same = Check::Same {
            id: 1_000_000_020,
            len: 9,
        };
        assert_eq!(k.check(&next), same);
        next[8] = 2;
        assert_eq!(k.check(&next), Check::Differs);

        // An id found twice, or not at all, cannot be told apart: nothing is learnt.
        let twice = br#"{"id":1000000019,"result":1000000019}"#;
        assert!(KnownAnswer::learn(twice, 1_000_000_019, IdForm::Decimal10).is_none());
        assert!(KnownAnswer::learn(b"{}", 1_000_000_019, IdForm::Decimal10).is_none());
    }
}

/// How a call's id is written in its bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum IdForm {
    /// msgpack `uint32`: 4 big-endian bytes after the 0xce marker.
    U32Be,
    /// JSON: 10 ASCII digits.
    Decimal10,
}

impl IdForm {
    /// Where `id` is written in `bytes` (its first byte), if it is there exactly once.
    /// Once per run or per learnt answer, over one message: a plain scan will do.
    pub(crate) fn find_once(self, bytes: &[u8], id: u32) -> Option<usize> {
        let needle = self.bytes(id);
        let mut hits = bytes
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == &needle[..])
            .map(|(i, _)| i + self.skip());
        match (hits.next(), hits.next()) {
            (Some(at), None) => Some(at),
            _ => None,
        }
    }

    /// The bytes `id` is found by: for msgpack, its marker and its 4 bytes.
    fn bytes(self, id: u32) -> Vec<u8> {
        match self {
            IdForm::U32Be => {
                let mut n = vec![0xce];
                n.extend_from_slice(&id.to_be_bytes());
                n
            }
            IdForm::Decimal10 => id.to_string().into_bytes(),
        }
    }

    /// Where the id itself starts in [`IdForm::bytes`].
    fn skip(self) -> usize {
        match self {
            IdForm::U32Be => 1,
            IdForm::Decimal10 => 0,
        }
    }

    /// The id's width in bytes.
    pub(crate) fn width(self) -> usize {
        match self {
            IdForm::U32Be => 4,
            IdForm::Decimal10 => 10,
        }
    }

    /// Write `id` at the start of `slot`.
    pub(crate) fn write(self, slot: &mut [u8], id: u32) {
        match self {
            IdForm::U32Be => slot[..4].copy_from_slice(&id.to_be_bytes()),
            IdForm::Decimal10 => {
                let mut n = id;
                for d in slot[..10].iter_mut().rev() {
                    *d = b'0' + (n % 10) as u8;
                    n /= 10;
                }
            }
        }
    }

    /// The id written in `slot` ([`IdForm::width`] bytes), if it is one.
    pub(crate) fn read(self, slot: &[u8]) -> Option<u32> {
        match self {
            IdForm::U32Be => Some(u32::from_be_bytes(slot.try_into().ok()?)),
            IdForm::Decimal10 => {
                let mut n: u64 = 0;
                for &d in slot {
                    if !d.is_ascii_digit() {
                        return None;
                    }
                    n = n * 10 + u64::from(d - b'0');
                }
                u32::try_from(n).ok()
            }
        }
    }
}
