//! The console page: a static page embedded in the binary (no build step, no CDN) that
//! lists the verbs with their help (`rpc.discover`), calls one with JSON params over
//! HTTP POST, and shows live events over a WebSocket. Served at `GET /` to browsers
//! (`Accept: text/html`; curl and probes keep the text index) when `[web] console` is
//! on (by default with the demo verbs).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};

const PAGE: &str = include_str!("console/console.html");
const SCRIPT: &str = include_str!("console/console.js");

/// Only this server's own script, styles inline, calls and sockets to this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; \
                   connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// Is the console on for this server?
pub(crate) fn enabled(config: &crate::Config) -> bool {
    config.web.console.unwrap_or(config.demo)
}

/// Does the request's `Accept` ask for HTML (a browser)?
pub(crate) fn wants_html<B>(req: &hyper::Request<B>) -> bool {
    req.headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// The page (`/`), its script (`/console.js`), or no icon; 404 for other paths.
pub(crate) fn serve(path: &str) -> Response<Full<Bytes>> {
    let (body, ctype) = match path {
        // Browsers ask for it; no icon, and no 404 in the page's console.
        "/favicon.ico" => {
            let mut r = Response::new(Full::default());
            *r.status_mut() = StatusCode::NO_CONTENT;
            return r;
        }
        "/" => (PAGE, "text/html; charset=utf-8"),
        "/console.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => {
            let mut r = Response::new(Full::default());
            *r.status_mut() = StatusCode::NOT_FOUND;
            return r;
        }
    };
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
