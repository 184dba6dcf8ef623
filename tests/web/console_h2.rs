//! The console over `https://` in headless Chromium: the browser negotiates HTTP/2 by
//! ALPN, and the page, its script and its calls come over it — checked in the browser
//! (resource timing's `nextHopProtocol`) and on the server (the call counted as
//! `jsonrpc-h2`), not assumed. The events WebSocket is a stream of the same connection
//! (RFC 8441), counted on the server as `jsonrpc-ws-h2`.

use crate::common::pki::Pki;
use crate::common::run_node;
use crate::common::Server;
use crate::websocket::chromium;

#[test]
fn the_console_over_https_speaks_http2() {
    let pki = Pki::new();
    let mut args = pki.server_flags();
    args.extend(["--tls".into(), "optional".into()]);
    let srv = Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let base = format!("https://127.0.0.1:{}", srv.port());
    let out = run_node("console_h2_browser.mjs", &[&base, &chromium()]);
    let r: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["title"], "rpcmux console", "{r}");
    assert_eq!(r["navigation"], "h2", "the page itself: {r}");
    let resources = r["resources"].as_array().unwrap();
    let calls: Vec<_> = resources.iter().filter(|e| e["kind"] == "fetch").collect();
    assert!(!calls.is_empty(), "the page's calls are in its timing: {r}");
    for e in resources {
        assert_eq!(e["protocol"], "h2", "every resource over h2: {e} in {r}");
    }
    assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    // The server saw the form's VM.create over HTTP/2.
    let (_, _, metrics) = crate::common::parse_http(&crate::common::exchange(
        srv.addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics
            .contains(r#"rpcmux_calls_started_total{protocol="jsonrpc-h2",method="VM.create"} 1"#),
        "{metrics}"
    );
    // The events WebSocket rode the same connection (RFC 8441's extended CONNECT), as
    // Chromium chooses once the server's SETTINGS allow it; the event reached the page.
    assert!(
        metrics.contains(
            r#"rpcmux_calls_started_total{protocol="jsonrpc-ws-h2",method="subscribe"} 1"#
        ),
        "{metrics}"
    );
}
