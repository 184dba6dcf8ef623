//! What Python's `xmlrpc.client` really sends and answers (fixtures made by Python 3's
//! `xmlrpc.client.dumps`; see tests/fixtures/README.md), read, then written back.

mod common;

use common::{every_type, every_type_params, fixture, music_entry};
use rpcmux_value::{RpcError, Value};
use rpcmux_xmlrpc::{
    parse_call, parse_response, write_call, write_fault, write_response, Limits, MethodCall,
};

fn limits() -> Limits {
    Limits::default()
}

#[test]
fn music_entry_call_from_python() {
    let call = parse_call(&fixture("music_entry_call.xml"), &limits()).unwrap();
    assert_eq!(call.method, "echo");
    assert_eq!(call.params, vec![music_entry()]);
    // Member order survives.
    let keys: Vec<_> = call.params[0].as_array().unwrap()[1]
        .as_struct()
        .unwrap()
        .keys()
        .take(3)
        .cloned()
        .collect();
    assert_eq!(keys, ["email", "time", "tickets"]);
}

#[test]
fn music_entry_echo_round_trip() {
    let call = parse_call(&fixture("music_entry_call.xml"), &limits()).unwrap();
    let mut out = Vec::new();
    write_response(&mut out, &call.params[0]);
    assert_eq!(parse_response(&out, &limits()).unwrap(), Ok(music_entry()));

    out.clear();
    write_call(&mut out, "echo", &call.params);
    assert_eq!(parse_call(&out, &limits()).unwrap(), call);
}

#[test]
fn every_type_response_from_python() {
    let got = parse_response(&fixture("every_type_response.xml"), &limits()).unwrap();
    assert_eq!(got, Ok(every_type()));
    // And back through our writer.
    let mut out = Vec::new();
    write_response(&mut out, &every_type());
    assert_eq!(parse_response(&out, &limits()).unwrap(), Ok(every_type()));
}

#[test]
fn every_type_call_from_python() {
    let call = parse_call(&fixture("every_type_call.xml"), &limits()).unwrap();
    assert_eq!(
        call,
        MethodCall {
            method: "every.type".into(),
            params: every_type_params()
        }
    );
}

#[test]
fn fault_from_python() {
    let got = parse_response(&fixture("fault_response.xml"), &limits()).unwrap();
    assert_eq!(
        got,
        Err(RpcError::new(-32601, "Method not found: nope <&>"))
    );
    let mut out = Vec::new();
    write_fault(
        &mut out,
        &RpcError::new(-32601, "Method not found: nope <&>"),
    );
    assert_eq!(parse_response(&out, &limits()).unwrap(), got);
}

#[test]
fn hand_written_variants_real_servers_send() {
    // Indented, untyped strings, `<i4>`, no <params> at all, CRLF line ends, a BOM.
    let doc = "\u{feff}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n<!-- hi -->\r\n\
               <methodCall>\r\n  <methodName> system.listMethods </methodName>\r\n</methodCall>\r\n";
    let call = parse_call(doc.as_bytes(), &limits()).unwrap();
    assert_eq!(call.method, "system.listMethods");
    assert!(call.params.is_empty());

    let doc = "<methodCall><methodName>m</methodName><params/></methodCall>";
    assert!(parse_call(doc.as_bytes(), &limits())
        .unwrap()
        .params
        .is_empty());

    let doc = "<methodResponse><params>\n<param>\n  <value>\n    <i4>5</i4>\n  </value>\n\
               </param>\n</params></methodResponse>";
    assert_eq!(
        parse_response(doc.as_bytes(), &limits()).unwrap(),
        Ok(Value::Int(5))
    );

    let doc = "<methodResponse><params><param><value>untyped &amp; plain</value></param>\
               </params></methodResponse>";
    assert_eq!(
        parse_response(doc.as_bytes(), &limits()).unwrap(),
        Ok(Value::from("untyped & plain"))
    );

    // A fault whose code some servers send as a string.
    let doc = "<methodResponse><fault><value><struct><member><name>faultString</name>\
               <value>boom</value></member><member><name>faultCode</name><value>\
               <string>4</string></value></member></struct></value></fault></methodResponse>";
    assert_eq!(
        parse_response(doc.as_bytes(), &limits()).unwrap(),
        Err(RpcError::new(4, "boom"))
    );
}

#[test]
fn wrong_documents() {
    let code = |doc: &str| parse_call(doc.as_bytes(), &limits()).unwrap_err().code;
    let code_resp = |doc: &str| parse_response(doc.as_bytes(), &limits()).unwrap_err().code;
    const PARSE: i64 = RpcError::PARSE_ERROR;
    const INVALID: i64 = RpcError::INVALID_REQUEST;
    assert_eq!(code(""), PARSE);
    assert_eq!(code("   "), PARSE);
    assert_eq!(code("not xml"), PARSE);
    assert_eq!(code("{\"jsonrpc\":\"2.0\"}"), PARSE);
    assert_eq!(
        code("<methodCall><methodName>a</methodName></methodCall><x/>"),
        PARSE
    );
    assert_eq!(
        code("<methodCall><methodName>a</methodName></methodCall>junk"),
        PARSE
    );
    assert_eq!(
        code("<methodCall><methodName>a</methodNam></methodCall>"),
        PARSE
    );
    assert_eq!(
        code("<methodCall><methodName>a&bogus;</methodName></methodCall>"),
        PARSE
    );
    assert_eq!(code("<methodResponse/>"), INVALID);
    assert_eq!(code("<methodCall/>"), INVALID);
    assert_eq!(code("<methodCall><methodName/></methodCall>"), INVALID);
    assert_eq!(code("<methodCall><params/></methodCall>"), INVALID);
    assert_eq!(
        code("<methodCall><methodName>a</methodName><param/></methodCall>"),
        INVALID
    );
    assert_eq!(
        code("<methodCall><methodName>a</methodName><params><param/></params></methodCall>"),
        INVALID
    );
    assert_eq!(
        code(
            "<methodCall><methodName>a</methodName><params><param><value><int>x</int>\
              </value></param></params></methodCall>"
        ),
        INVALID
    );
    assert_eq!(code_resp("<methodCall/>"), INVALID);
    assert_eq!(code_resp("<methodResponse></methodResponse>"), INVALID);
    assert_eq!(
        code_resp(
            "<methodResponse><params><param><value/></param><param><value/></param>\
                   </params></methodResponse>"
        ),
        INVALID
    );
    assert_eq!(
        code_resp("<methodResponse><fault><value>x</value></fault></methodResponse>"),
        INVALID
    );
    // An empty <params/> in a response reads as nil.
    assert_eq!(
        parse_response(b"<methodResponse><params/></methodResponse>", &limits()).unwrap(),
        Ok(Value::Nil)
    );
}
