//! Hostile and broken input: every case must give `Err` quickly and never panic.

mod common;
use fastrand::Rng;

use common::fixture;
use rpcmux_value::RpcError;
use rpcmux_xmlrpc::{parse_call, parse_response, Limits};
use std::time::{Duration, Instant};

/// Parse as a call and as a response; both must fail, fast. Returns the call's error.
fn refused(doc: &[u8]) -> RpcError {
    let start = Instant::now();
    let err = parse_call(doc, &Limits::default()).expect_err("call accepted");
    assert!(parse_response(doc, &Limits::default()).is_err());
    // Generous for debug builds on a shared 2-core machine; the real cost is microseconds.
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    err
}

#[test]
fn billion_laughs_refused_at_the_doctype() {
    let mut doc =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_owned()
        } else {
            format!("lol{}", i - 1)
        };
        doc += &format!("<!ENTITY lol{i} \"{}\">\n", format!("&{prev};").repeat(10));
    }
    doc += "]>\n<methodCall><methodName>&lol9;</methodName></methodCall>";
    let err = refused(doc.as_bytes());
    assert_eq!(err.code, RpcError::PARSE_ERROR);
    assert!(err.message.contains("DTDs are not allowed"), "{err}");
}

#[test]
fn external_entities_refused() {
    for doc in [
        "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\
         <methodCall><methodName>&xxe;</methodName></methodCall>",
        "<!DOCTYPE methodCall SYSTEM \"http://example.invalid/x.dtd\"><methodCall/>",
        "<!DOCTYPE r [<!ENTITY % p SYSTEM \"http://example.invalid/p\"> %p;]><methodCall/>",
    ] {
        let err = refused(doc.as_bytes());
        assert_eq!(err.code, RpcError::PARSE_ERROR, "{doc}");
        assert!(err.message.contains("DTD"), "{err}");
    }
    // Without a DTD, an undeclared entity is simply an error (never looked up).
    let err = refused(b"<methodCall><methodName>&xxe;</methodName></methodCall>");
    assert_eq!(err.code, RpcError::PARSE_ERROR);
}

#[test]
fn deep_nesting_stops_at_the_depth_limit() {
    let n = 100_000;
    let open = "<value><array><data>".repeat(n);
    let close = "</data></array></value>".repeat(n);
    let doc = format!(
        "<methodCall><methodName>m</methodName><params><param>{open}<value>1</value>{close}\
         </param></params></methodCall>"
    );
    let err = refused(doc.as_bytes());
    assert_eq!(err.code, RpcError::INVALID_REQUEST);
    assert!(err.message.contains("max_depth"), "{err}");

    let structs = "<value><struct><member><name>a</name>".repeat(n);
    let doc = format!("<methodCall><methodName>m</methodName><params><param>{structs}");
    assert!(refused(doc.as_bytes()).message.contains("max_depth"));

    // Deep nesting of elements that are not XML-RPC stops at the first one.
    let doc = format!("<methodCall>{}", "<a>".repeat(n));
    assert_eq!(refused(doc.as_bytes()).code, RpcError::INVALID_REQUEST);

    // A raised limit is honoured without touching the stack (the parser is iterative).
    let limits = Limits {
        max_depth: usize::MAX,
        ..Limits::default()
    };
    let doc = format!(
        "<methodCall><methodName>m</methodName><params><param>{open}<value>1</value>{close}\
         </param></params></methodCall>"
    );
    let call = parse_call(doc.as_bytes(), &limits).unwrap();
    assert_eq!(call.params.len(), 1);
    // Drop the 100k-deep Value on a thread with a big stack: Value's own Drop recurses.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || drop(call))
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn element_count_and_string_limits() {
    let limits = Limits {
        max_elements: 1000,
        max_string: 1000,
        ..Limits::default()
    };
    let values = "<value/>".repeat(2000);
    let doc = format!(
        "<methodCall><methodName>m</methodName><params><param><value><array><data>{values}\
         </data></array></value></param></params></methodCall>"
    );
    let err = parse_call(doc.as_bytes(), &limits).unwrap_err();
    assert!(err.message.contains("max_elements"), "{err}");

    for inner in [
        format!("<value>{}</value>", "x".repeat(1001)),
        format!("<value><string>{}</string></value>", "&amp;".repeat(1001)),
        format!("<value><base64>{}</base64></value>", "A".repeat(1004)),
        format!(
            "<value><struct><member><name>{}</name><value/></member></struct></value>",
            "n".repeat(1001)
        ),
    ] {
        let doc = format!(
            "<methodCall><methodName>m</methodName><params><param>{inner}</param></params>\
             </methodCall>"
        );
        let err = parse_call(doc.as_bytes(), &limits).unwrap_err();
        assert_eq!(err.code, RpcError::INVALID_REQUEST);
        assert!(err.message.contains("max_string"), "{err}");
    }
    let doc = format!(
        "<methodCall><methodName>{}</methodName></methodCall>",
        "m".repeat(1001)
    );
    assert!(parse_call(doc.as_bytes(), &limits).is_err());
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    for doc in [
        &b"<methodCall><methodName>\xff</methodName></methodCall>"[..],
        b"<methodCall><methodName>m</methodName><params><param><value>\xc3\x28</value>\
          </param></params></methodCall>",
        b"<methodCall><!-- \xfe --><methodName>m</methodName></methodCall>",
        b"<methodCall \xff=\"1\"><methodName>m</methodName></methodCall>",
        // UTF-16 with a BOM: not accepted (Python's client only sends UTF-8).
        b"\xff\xfe<\0m\0",
    ] {
        let err = refused(doc);
        assert_eq!(err.code, RpcError::PARSE_ERROR, "{err}");
    }
}

#[test]
fn characters_xml_forbids_are_refused_raw_or_referenced() {
    let call = |inner: &str| {
        format!(
            "<?xml version=\"1.0\"?><methodCall><methodName>m</methodName><params><param>\
             <value>{inner}</value></param></params></methodCall>"
        )
    };
    let mut forbidden: Vec<char> = (0u8..0x20)
        .filter(|b| !matches!(b, b'\t' | b'\n' | b'\r'))
        .map(char::from)
        .collect();
    forbidden.extend(['\u{fffe}', '\u{ffff}']);
    for c in forbidden {
        let u = u32::from(c);
        let docs = [
            call(&format!("<string>a{c}b</string>")),
            call(&format!("a{c}b")),
            call(&format!("<![CDATA[{c}]]>")),
            call(&format!("<string>&#{u};</string>")),
            call(&format!("<string>&#x{u:X};</string>")),
            call(&format!("<string>x<!-- {c} -->y</string>")),
            format!("<methodCall a='{c}'><methodName>m</methodName></methodCall>"),
        ];
        for doc in docs {
            let err = refused(doc.as_bytes());
            assert_eq!(err.code, RpcError::PARSE_ERROR, "{doc:?}: {err}");
            assert!(
                err.message.contains(&format!("U+{u:04X}")) && err.message.contains("XML 1.0"),
                "{doc:?}: {err}"
            );
        }
    }
    // TAB, LF and CR are XML characters, raw or referenced.
    let doc = call("<string>\t\n&#9;&#10;&#13;&#xD;</string>");
    let got = parse_call(doc.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(got.params, [rpcmux_value::Value::from("\t\n\t\n\r\r")]);
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    for name in [
        "music_entry_call.xml",
        "every_type_call.xml",
        "every_type_response.xml",
        "fault_response.xml",
    ] {
        let doc = fixture(name);
        let root_end = doc
            .windows(2)
            .rposition(|w| w == b"</")
            .expect("has a close tag");
        for len in 0..doc.len() {
            let prefix = &doc[..len];
            let call = parse_call(prefix, &Limits::default());
            let resp = parse_response(prefix, &Limits::default());
            if len <= root_end {
                // The root element is not closed yet: nothing may be accepted.
                assert!(
                    call.is_err() && resp.is_err(),
                    "{name} prefix {len} accepted"
                );
            }
        }
    }
}

#[test]
fn random_mutations_never_panic() {
    const PIECES: &[&[u8]] = &[
        b"<",
        b">",
        b"/",
        b"&",
        b";",
        b"&#",
        b"&#x",
        b"&amp;",
        b"<value>",
        b"</value>",
        b"<array><data>",
        b"</data></array>",
        b"<struct>",
        b"<member>",
        b"<name>",
        b"</name>",
        b"<nil/>",
        b"<i8>",
        b"<![CDATA[",
        b"]]>",
        b"<!--",
        b"-->",
        b"<?",
        b"?>",
        b"\r",
        b"\xff",
        b"\xc3",
        b"<!DOCTYPE",
        b"ex:",
        b"\0",
    ];
    let docs: Vec<Vec<u8>> = ["music_entry_call.xml", "every_type_response.xml"]
        .iter()
        .map(|n| fixture(n))
        .collect();
    let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let limits = Limits::default();
    for _ in 0..10_000 {
        let mut doc = docs[rng.usize(..docs.len())].clone();
        for _ in 0..1 + rng.usize(..4) {
            let at = rng.usize(..doc.len() + 1);
            match rng.usize(..4) {
                0 if at < doc.len() => doc[at] = rng.u64(..) as u8,
                1 if at < doc.len() => {
                    let end = (at + rng.usize(..16)).min(doc.len());
                    doc.drain(at..end);
                }
                _ => {
                    let piece = PIECES[rng.usize(..PIECES.len())];
                    doc.splice(at..at, piece.iter().copied());
                }
            }
        }
        let _ = parse_call(&doc, &limits);
        let _ = parse_response(&doc, &limits);
    }
}
