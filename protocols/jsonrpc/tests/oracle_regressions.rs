//! Behaviour pinned by the differential fuzz target `json_value_oracle` (rpcmux's reader
//! against serde_json's value tree; docs/fuzzing.md): the fixed divergences and the
//! intended differences.
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

#[test]
fn an_inexact_integer_is_refused_even_where_a_repeated_name_overrides_it() {
    // Intended (json_value_oracle, 7 December 2026, against an oracle that judged
    // serde_json's tree, which keeps only a repeated name's last value): every number
    // written in params is judged, so a member a repeat overrides does not hide one.
    let huge = "1".repeat(40);
    let body =
        format!(r#"{{"jsonrpc":"2.0","method":"m","params":{{"b":{huge},"a":1,"b":2}},"id":1}}"#);
    let tree: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(tree["params"]["b"], 2, "serde_json keeps the last");
    let Ok(Incoming::Single(Err(f))) = parse(body.as_bytes()) else {
        panic!("not refused")
    };
    assert_eq!(f.error.code, RpcError::INVALID_PARAMS, "{:?}", f.error);
    assert!(
        f.error.message.contains("beyond the 64-bit"),
        "{:?}",
        f.error
    );
    // The same member alone, exact, is served.
    let body = r#"{"jsonrpc":"2.0","method":"m","params":{"b":1,"a":1,"b":2},"id":1}"#;
    assert!(matches!(
        parse(body.as_bytes()),
        Ok(Incoming::Single(Ok(_)))
    ));
}

#[test]
fn a_params_member_given_twice_is_malformed_even_when_one_is_null() {
    // Found by json_value_oracle (7 December 2026): `"params": null` set no params and
    // so was not counted as a member, and `[1]` then `null` ran with `[1]` where
    // serde_json's tree (the last value) has none. A repeated member is malformed.
    for params in [
        r#""params":[1],"params":null"#,
        r#""params":null,"params":[1]"#,
        r#""params":[1],"params":[2]"#,
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"m",{params},"id":1}}"#);
        let Ok(Incoming::Single(Err(f))) = parse(body.as_bytes()) else {
            panic!("{body}: served")
        };
        assert_eq!(
            f.error.code,
            RpcError::INVALID_REQUEST,
            "{body}: {:?}",
            f.error
        );
    }
}
