//! [`Str`], the string of the data model: a struct's member names and string values.
//!
//! Why not `String`: a decoded request is mostly short strings (member names such as
//! `vmId`, `memSize`; values such as `"up"`, `"vm1"`), and a `String` is one heap
//! allocation each. `Str` keeps up to 24 bytes inline, in the same 24 bytes a `String`
//! takes, so those cost no allocation to decode, clone or drop; a longer one is a heap
//! string as before, and converting a long `String` into a `Str` keeps its buffer. The
//! storage is [`compact_str`](https://docs.rs/compact_str)'s; a newtype, so that the
//! crate is not part of this crate's API and may be changed behind it.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// An immutable UTF-8 string, inline up to 24 bytes. Reads as a `&str` (`Deref`).
///
/// ```
/// use rpcmux_value::{Str, Value};
/// let s = Str::from("vmId");
/// assert_eq!(s, "vmId");
/// assert_eq!(s.len(), 4); // every `str` method, through `Deref`
/// let back: String = s.into();
/// assert_eq!(Value::from("up").as_str(), Some("up"));
/// # let _ = back;
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Str(compact_str::CompactString);

impl Str {
    /// A `Str` holding `s` (no allocation up to 24 bytes).
    #[inline]
    pub fn new(s: &str) -> Str {
        Str(compact_str::CompactString::new(s))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether the text is on the heap (longer than 24 bytes).
    #[inline]
    pub(crate) fn is_heap(&self) -> bool {
        self.0.is_heap_allocated()
    }

    /// Bytes this string holds on the heap: none when inline, its capacity otherwise
    /// (for memory accounting).
    #[inline]
    pub fn heap_bytes(&self) -> usize {
        if self.is_heap() {
            self.0.capacity()
        } else {
            0
        }
    }

    /// The text as a `String` (reusing the buffer of a long one).
    #[inline]
    pub fn into_string(self) -> String {
        self.0.into_string()
    }
}

impl Deref for Str {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for Str {
    #[inline]
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<[u8]> for Str {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Borrow<str> for Str {
    #[inline]
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

/// Hashes as the `str` it holds, so a map keyed by `Str` is looked up by `&str`.
impl Hash for Str {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Str {
    #[inline]
    fn from(s: &str) -> Str {
        Str::new(s)
    }
}

impl From<&String> for Str {
    #[inline]
    fn from(s: &String) -> Str {
        Str::new(s)
    }
}

impl From<String> for Str {
    #[inline]
    fn from(s: String) -> Str {
        Str(compact_str::CompactString::from(s))
    }
}

impl From<Box<str>> for Str {
    fn from(s: Box<str>) -> Str {
        Str::from(String::from(s))
    }
}

impl From<Cow<'_, str>> for Str {
    fn from(s: Cow<'_, str>) -> Str {
        match s {
            Cow::Borrowed(s) => Str::new(s),
            Cow::Owned(s) => Str::from(s),
        }
    }
}

impl From<char> for Str {
    fn from(c: char) -> Str {
        Str::new(c.encode_utf8(&mut [0; 4]))
    }
}

impl From<Str> for String {
    #[inline]
    fn from(s: Str) -> String {
        s.into_string()
    }
}

impl std::str::FromStr for Str {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Str, Self::Err> {
        Ok(Str::new(s))
    }
}

impl PartialEq<str> for Str {
    fn eq(&self, o: &str) -> bool {
        self.as_str() == o
    }
}

impl PartialEq<&str> for Str {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

impl PartialEq<String> for Str {
    fn eq(&self, o: &String) -> bool {
        self.as_str() == o.as_str()
    }
}

impl PartialEq<Str> for str {
    fn eq(&self, o: &Str) -> bool {
        self == o.as_str()
    }
}

impl PartialEq<Str> for &str {
    fn eq(&self, o: &Str) -> bool {
        *self == o.as_str()
    }
}

impl PartialEq<Str> for String {
    fn eq(&self, o: &Str) -> bool {
        self.as_str() == o.as_str()
    }
}

impl serde::Serialize for Str {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read from a borrowed `&str` when the format lends one (serde_json does for strings
/// without escapes): a short name or value is then copied inline, never allocated.
impl<'de> serde::Deserialize<'de> for Str {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Str, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<Str, E> {
                Ok(Str::new(v))
            }
            fn visit_string<E>(self, v: String) -> Result<Str, E> {
                Ok(Str::from(v))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_inline_and_long_ones_keep_their_buffer() {
        assert_eq!(std::mem::size_of::<Str>(), std::mem::size_of::<String>());
        let short = Str::new("memSize");
        assert!(!short.0.is_heap_allocated());
        let exactly = Str::new(&"x".repeat(24));
        assert!(!exactly.0.is_heap_allocated());
        let long = "a member name longer than 24 bytes".to_owned();
        let ptr = long.as_ptr();
        let s = Str::from(long);
        assert_eq!(s.as_ptr(), ptr);
        let back = String::from(s);
        assert_eq!(back.as_ptr(), ptr);
    }

    #[test]
    fn compares_and_hashes_as_its_text() {
        use std::collections::HashSet;
        let s = Str::from("ünïcode");
        assert_eq!(s, "ünïcode");
        assert_eq!("ünïcode", s);
        assert_eq!(s, String::from("ünïcode"));
        let set: HashSet<Str> = [Str::new("a")].into_iter().collect();
        assert!(set.contains("a"));
        assert_eq!(format!("{s} {s:?}"), "ünïcode \"ünïcode\"");
    }
}
