//! Whether an answer is right, and how to show one.

use crate::cli::bench::engine::stats::Outcome;
use rpcmux::client::{ClientError, Reply};
use rpcmux_value::Value;

/// `a == b`, cheaply in the usual case. `Value`'s `==` compares structs as maps (a
/// hash lookup per member, whatever the order); an echo normally keeps member order,
/// so compare in order first and fall back to `==` only when that fails (a server
/// that reorders members is still right). On the load generator's hot path.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    in_order(a, b) || a == b
}

pub(crate) fn in_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| eq_bytes(ka, kb) && in_order(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| in_order(va, vb))
        }
        (Value::String(x), Value::String(y)) => eq_bytes(x, y),
        _ => a == b,
    }
}

/// Byte equality, 8 bytes at a time, inline. The strings of a payload are short, and
/// a `memcmp` call per string showed up as the load generator's largest single cost.
pub(crate) fn eq_bytes(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (wa, wb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ta, tb) = (wa.remainder(), wb.remainder());
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or_default());
    wa.zip(wb).all(|(x, y)| word(x) == word(y)) && ta.iter().zip(tb).all(|(x, y)| x == y)
}

/// How an answered call counts: an error reply, a result other than `expect` (when
/// given), or right.
pub(crate) fn judge(reply: &Reply, expect: Option<&Value>) -> Outcome {
    match reply {
        Ok(v) if expect.is_some_and(|want| !same(v, want)) => Outcome::WrongResult,
        Ok(_) => Outcome::Ok,
        Err(_) => Outcome::ErrorReply,
    }
}

pub(crate) fn describe(r: &Result<Reply, ClientError>) -> String {
    match r {
        Ok(reply) => describe_reply(reply),
        Err(e) => e.to_string(),
    }
}

/// What was wrong with an answered call, for the report's first-error line.
pub(crate) fn describe_reply(reply: &Reply) -> String {
    match reply {
        Ok(v) => format!(
            "wrong result: {}",
            serde_json::to_string(v)
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect::<String>()
        ),
        Err(e) => format!("error reply {}: {}", e.code, e.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    #[test]
    fn same_ignores_member_order_only_as_a_fallback() {
        let a = vstruct! { "x" => 1, "y" => vec![Value::from("s")] };
        let b = vstruct! { "y" => vec![Value::from("s")], "x" => 1 };
        assert!(in_order(&a, &a.clone()));
        assert!(!in_order(&a, &b));
        assert!(same(&a, &b));
        assert!(!same(
            &a,
            &vstruct! { "x" => 1, "y" => vec![Value::from("t")] }
        ));
        assert!(!same(&Value::Int(1), &Value::Double(1.0)));
        for (x, y) in [
            ("", ""),
            ("abcdefgh", "abcdefgh"),
            ("abcdefghij", "abcdefghij"),
        ] {
            assert!(eq_bytes(x, y));
        }
        for (x, y) in [
            ("a", ""),
            ("abcdefgh", "abcdefgi"),
            ("abcdefghij", "abcdefghik"),
            ("xbcdefghij", "abcdefghij"),
        ] {
            assert!(!eq_bytes(x, y), "{x} {y}");
        }
    }
}
