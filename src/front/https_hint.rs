//! The words a plaintext HTTP client on a port that requires TLS is told, whichever HTTP
//! version it speaks (HTTP/1.x in `front`, HTTP/2 in `front::h2_refusal`).

/// What a plaintext HTTP client on a port that requires TLS is told, in the body of a
/// `400`: to use `https://`, with the URL when the request named its host (`host`, a
/// `Host` header or HTTP/2's `:authority`) as a plain name; anything else in it is not
/// echoed.
pub(crate) fn tls_required_text(host: Option<&str>) -> String {
    let host = host.map(str::trim).filter(|h| {
        !h.is_empty()
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]_".contains(&b))
    });
    match host {
        Some(host) => {
            format!("This port requires TLS: send the request over https:// (https://{host}/).\n")
        }
        None => "This port requires TLS: send the request over https://.\n".to_owned(),
    }
}
