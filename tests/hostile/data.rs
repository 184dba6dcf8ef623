//! Data that must come back exactly: random doubles (bit patterns), JSON-RPC ids spelled
//! oddly, XML-RPC dateTimes with fractional seconds; and bodies that must be read whole
//! or refused: a two-member gzip body, a UTF-8 BOM before JSON, a character reference
//! XML forbids.

use crate::common::hostile::*;
use crate::common::*;

/// 10,000 finite doubles from seeded random bit patterns (every exponent, subnormals,
/// both zeros), in Rust's shortest round-trip spelling.
fn random_doubles() -> Vec<f64> {
    let mut rng = Rng(0x5eed_f10a7);
    let mut out = Vec::with_capacity(10_000);
    while out.len() < 10_000 {
        let f = f64::from_bits(rng.next());
        if f.is_finite() {
            out.push(f);
        }
    }
    out.extend([
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        -f64::MAX,
        0.1,
        1.0 / 3.0,
    ]);
    out
}

/// The numbers of the `result` array in a reply, parsed with Rust's correctly rounded
/// parser (serde_json's default float parsing is not exact, so it is not the judge).
fn result_numbers(reply: &str) -> Vec<f64> {
    let at = reply
        .find("\"result\":[")
        .unwrap_or_else(|| panic!("no result array: {}", excerpt(reply.as_bytes(), 300)))
        + 10;
    let end = reply[at..].find(']').expect("end of the array") + at;
    reply[at..end]
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<f64>()
                .unwrap_or_else(|e| panic!("{n:?} is not a number: {e}"))
        })
        .collect()
}

fn assert_bit_identical(sent: &[f64], got: &[f64], what: &str) {
    assert_eq!(sent.len(), got.len(), "{what}: count");
    let wrong: Vec<String> = sent
        .iter()
        .zip(got)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .map(|(a, b)| format!("{a:?} came back {b:?}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{what}: {} of {} doubles changed, e.g. {:?}",
        wrong.len(),
        sent.len(),
        &wrong[..wrong.len().min(5)]
    );
}

#[test]
fn random_doubles_echo_bit_identical_over_http_and_tcp() {
    let srv = Server::start_limited(&[]);
    let sent = random_doubles();
    let spelled: Vec<String> = sent.iter().map(|f| format!("{f:?}")).collect();
    let params = format!("[[{}]]", spelled.join(","));

    let r = post(srv.addr, &[JSON], &jsonrpc("echo", &params, "1"), 4 * MIB).expect("HTTP echo");
    assert_eq!(r.status, 200);
    assert_bit_identical(&sent, &result_numbers(&r.text()), "JSON-RPC over HTTP");

    let mut c = Lines::connect(srv.addr).unwrap();
    let mut req = jsonrpc("echo", &params, "2");
    req.push(b'\n');
    c.send(&req).unwrap();
    let line = c.line(4 * MIB).expect("raw TCP echo");
    assert_bit_identical(&sent, &result_numbers(&line), "JSON-RPC over raw TCP");
}

/// Ids that a JSON parser would respell if it read them as numbers and wrote them back.
const ODD_IDS: [&str; 4] = ["1e2", "-0", "1.50", "123456789012345678901234567890"];

#[test]
fn odd_json_ids_come_back_byte_exact() {
    let srv = Server::start_limited(&[]);
    for id in ODD_IDS {
        let want = format!("\"id\":{id}");
        let r = post(srv.addr, &[JSON], &jsonrpc("ping", "[]", id), 64 * KIB).expect("HTTP");
        let text = r.text();
        assert!(
            text.contains(&format!("{want}}}")) || text.contains(&format!("{want},")),
            "HTTP: id {id} came back respelled: {text}"
        );
        let mut c = Lines::connect(srv.addr).unwrap();
        let mut req = jsonrpc("ping", "[]", id);
        req.push(b'\n');
        c.send(&req).unwrap();
        let line = c.line(64 * KIB).expect("raw TCP");
        assert!(
            line.contains(&format!("{want}}}")) || line.contains(&format!("{want},")),
            "raw TCP: id {id} came back respelled: {line}"
        );
    }
}

/// The `dateTime.iso8601` text of an XML-RPC reply.
fn reply_datetime(xml: &str) -> Option<&str> {
    let start = xml.find("<dateTime.iso8601>")? + "<dateTime.iso8601>".len();
    let end = xml[start..].find("</dateTime.iso8601>")? + start;
    Some(&xml[start..end])
}

/// `20240102T03:04:05.500` -> (`20240102T03:04:05`, `5`): the same instant whatever
/// number of trailing zeros the fraction is written with.
fn split_fraction(dt: &str) -> (&str, &str) {
    match dt.split_once('.') {
        Some((whole, frac)) => (whole, frac.trim_end_matches('0')),
        None => (dt, ""),
    }
}

#[test]
fn xmlrpc_datetime_with_fractional_seconds_echoes_exactly() {
    let srv = Server::start_limited(&[]);
    for dt in [
        "20240102T03:04:05.123456",
        "20240102T03:04:05.5",
        "19991231T23:59:59.000001",
        "20240102T03:04:05.123456789",
    ] {
        let body = xmlrpc_call(
            "echo",
            &format!("<param><value><dateTime.iso8601>{dt}</dateTime.iso8601></value></param>"),
        );
        let r = post(srv.addr, &[XML], &body, 64 * KIB).expect("XML-RPC echo");
        let text = r.text();
        assert_eq!(fault_code(&text), None, "{text}");
        let got = reply_datetime(&text).unwrap_or_else(|| panic!("no dateTime in {text}"));
        // The same instant to the nanosecond, in the same basic format; the fraction may
        // gain trailing zeros (`.5` as `.500`), never lose digits.
        assert_eq!(
            split_fraction(got),
            split_fraction(dt),
            "{dt} came back as {got}"
        );
    }
}

#[test]
fn multi_member_gzip_body_is_read_whole() {
    let srv = Server::start_limited(&[]);
    let text = format!("{}{}", "A".repeat(5000), "B".repeat(5000));
    let req = jsonrpc("echo", &format!("[\"{text}\"]"), "1");
    // Two gzip members, the request split between them (what `cat a.gz b.gz`, pigz
    // and some streaming compressors produce; RFC 1952 allows any number).
    let (a, b) = req.split_at(req.len() / 2);
    let mut body = gzip(a);
    body.extend_from_slice(&gzip(b));
    let r = post(srv.addr, &[JSON, GZIP], &body, 256 * KIB).expect("reply");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json().unwrap();
    assert_eq!(v["result"], text.as_str(), "{}", excerpt(&r.body, 300));
}

#[test]
fn utf8_bom_before_a_json_body_is_accepted() {
    let srv = Server::start_limited(&[]);
    let mut body = b"\xEF\xBB\xBF".to_vec();
    body.extend_from_slice(&jsonrpc("ping", "[]", "1"));
    for headers in [&[JSON][..], &[][..]] {
        let r = post(srv.addr, headers, &body, 64 * KIB).expect("reply");
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.json().unwrap();
        assert_eq!(v["result"], true, "headers {headers:?}: {}", r.text());
    }
}

#[test]
fn xml_character_reference_to_a_control_character_is_a_fault() {
    let srv = Server::start_limited(&[]);
    for s in ["a&#1;b", "a&#x1;b", "&#0;", "&#xFFFE;"] {
        let body = xmlrpc_call(
            "echo",
            &format!("<param><value><string>{s}</string></value></param>"),
        );
        let r = post(srv.addr, &[XML], &body, 64 * KIB).expect("reply");
        let text = r.text();
        assert!(
            fault_code(&text).is_some(),
            "{s:?} is not an XML character: wanted a fault, got {text:?}"
        );
    }
}
