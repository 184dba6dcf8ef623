//! Verb and event name globs: `*` any run of characters (`.` and `|` included), `?` one
//! character, everything else literal.
//!
//! Hand-written rather than the regex crate: a policy has a few short patterns, they are
//! matched before every call and every event, and this matcher needs no compilation step,
//! no allocation and no dependency. It is the classic greedy-star walk with one
//! backtrack point, linear in practice and O(pattern × text) at worst.

/// Whether `text` matches `pattern`.
pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    let p = pattern.as_bytes();
    let t = text.as_bytes();
    let (mut pi, mut ti) = (0, 0);
    // After the last `*` seen: where the pattern resumes, and where in the text that
    // star's run currently ends (both at character boundaries).
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                pi += 1;
                star = Some((pi, ti));
            }
            Some(b'?') => {
                pi += 1;
                ti += char_len(t[ti]);
            }
            Some(&c) if c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last star swallow one more character and try again from there.
                Some((resume, end)) => {
                    let end = end + char_len(t[end]);
                    star = Some((resume, end));
                    pi = resume;
                    ti = end;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Whether any of `patterns` matches `text`.
pub(crate) fn any(patterns: &[Box<str>], text: &str) -> bool {
    patterns.iter().any(|p| matches(p, text))
}

/// The length of the UTF-8 character whose first byte is `b` (so `?` and a star's run
/// step over whole characters, never into one).
fn char_len(b: u8) -> usize {
    match b {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn literals() {
        assert!(matches("ping", "ping"));
        assert!(!matches("ping", "pin"));
        assert!(!matches("ping", "pingg"));
        assert!(matches("", ""));
        assert!(!matches("", "a"));
        assert!(!matches("a", ""));
        assert!(!matches("VM.start", "vm.start"), "case-sensitive");
    }

    #[test]
    fn stars() {
        assert!(matches("*", ""));
        assert!(matches("*", "anything.at|all"));
        assert!(matches("**", "x"));
        assert!(matches("VM.*", "VM.start"));
        assert!(matches("VM.*", "VM."));
        assert!(!matches("VM.*", "VM"));
        assert!(!matches("VM.*", "Host.start"));
        assert!(matches("*.start", "VM.start"));
        assert!(matches("*.start", "a.b.start"));
        assert!(!matches("*.start", "VM.stop"));
        assert!(matches("|virt|*", "|virt|VM_status|abc"));
        assert!(!matches("|virt|*", "|net|x"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(matches("a*b*c", "abc"));
        assert!(!matches("a*b*c", "aXXbYY"));
        // Backtracking past a partial match.
        assert!(matches("*aab", "aaaab"));
        assert!(matches("a*ab", "aab"));
        assert!(!matches("a*ab", "ab"));
        assert!(matches("*x*", "..x.."));
    }

    #[test]
    fn question_marks() {
        assert!(matches("?", "a"));
        assert!(!matches("?", ""));
        assert!(!matches("?", "ab"));
        assert!(matches("VM.?et", "VM.get"));
        assert!(matches("??*", "ab"));
        assert!(!matches("??*", "a"));
        // One character, not one byte.
        assert!(matches("?", "é"));
        assert!(matches("a?c", "a€c"));
        assert!(!matches("a??c", "a€c"));
        assert!(matches("*é", "xxé"));
        assert!(matches("*?", "€"));
    }

    #[test]
    fn other_characters_are_literal() {
        assert!(matches("a[b]c", "a[b]c"));
        assert!(!matches("a[b]c", "abc"));
        assert!(
            matches("a\\*", "a\\xyz"),
            "no escapes: the backslash is literal"
        );
        assert!(matches("a+b", "a+b"));
    }
}
