//! Behaviour pinned by the differential fuzz target `json_value_oracle` (rpcmux's reader
//! against serde_json's value tree; docs/fuzzing.md): one fixed divergence and one
//! intended difference.
use rpcmux_jsonrpc::{parse, Incoming};
use rpcmux_value::RpcError;

#[test]
fn a_body_that_is_not_utf8_is_a_parse_error_even_in_an_ignored_member() {
    // Found by json_value_oracle: serde_json skips an unknown member's string without
    // checking its UTF-8, so this was served (and a bad envelope answered -32600).
    for body in [
        &b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1,\"x\":\"\xff\"}"[..],
        b"{\"jsonrpc\":\"2.0\",\"mdthod\":\"\xfe\",\"id\":1.5}",
        b"[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[\"\xc3\"]}]",
    ] {
        assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
        let err = parse(body).unwrap_err();
        assert_eq!(err.code, RpcError::PARSE_ERROR, "{err:?}");
    }
}

#[test]
fn a_batch_member_with_a_lone_surrogate_fails_alone() {
    // Intended: the body is JSON by the grammar (RFC 8259 allows `\ud800`), but the
    // escape names no character, so serde_json refuses the body as one value. rpcmux
    // reads a batch member by member: that member is a parse error, the others served.
    let body = br#"[{"jsonrpc":"2.0","method":"m","params":["\ud800x"]},{"jsonrpc":"2.0","method":"n","id":2}]"#;
    assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
    let Ok(Incoming::Batch(items)) = parse(body) else {
        panic!("not a batch")
    };
    assert_eq!(
        items[0].as_ref().unwrap_err().error.code,
        RpcError::PARSE_ERROR
    );
    assert_eq!(items[1].as_ref().unwrap().method, "n");
}

#[test]
fn a_member_the_request_does_not_use_is_held_to_json_grammar_only() {
    // Intended: a number beyond f64 is JSON by the grammar but serde_json refuses to
    // decode it. In a member rpcmux ignores it is skipped, not decoded, so the request
    // is served; in `params` it is a parse error.
    let body = br#"{"jsonrpc":"2.0","method":"m","x":[1e999],"id":1}"#;
    assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
    let Ok(Incoming::Single(Ok(req))) = parse(body) else {
        panic!("not served")
    };
    assert_eq!(req.method, "m");
    let body = br#"{"jsonrpc":"2.0","method":"m","params":[1e999],"id":1}"#;
    assert_eq!(parse(body).unwrap_err().code, RpcError::PARSE_ERROR);
}
