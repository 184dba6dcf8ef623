//! The PROXY v1/v2 header parser (`rpcmux_sniff::proxy_header`,
//! protocols/sniff/src/proxy_header.rs): never panics; a header never claims more bytes
//! than given nor more than `MAX_HEADER`; the same header parses from exactly its own bytes
//! and from any extension of them, with the same SSL TLV; every shorter prefix of a header
//! needs more; the SSL TLV's texts are clean (1 to `MAX_TLV_TEXT` bytes, no control
//! characters) and a verified CN comes with a certificate and `verify == 0`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_sniff::proxy_header::{parse, Parsed, MAX_HEADER, MAX_TLV_TEXT};

fuzz_target!(|data: &[u8]| {
    let Parsed::Header(h) = parse(data) else {
        return;
    };
    assert!(
        h.len > 0 && h.len <= data.len() && h.len <= MAX_HEADER,
        "{h:?} of {} bytes",
        data.len()
    );
    assert_eq!(parse(&data[..h.len]), Parsed::Header(h));
    let mut longer = data[..h.len].to_vec();
    longer.extend_from_slice(b"\r\n\r\n\0\r\nQUIT\nPROXY TCP4 ");
    assert_eq!(parse(&longer), Parsed::Header(h));
    let ssl = h.ssl(data);
    assert_eq!(h.ssl(&data[..h.len]), ssl);
    assert_eq!(h.ssl(&longer), ssl);
    if let Some(ssl) = &ssl {
        assert_eq!(h.version, 2);
        assert_eq!(ssl.verified, ssl.verify == 0);
        for text in [
            &ssl.version,
            &ssl.cn,
            &ssl.cipher,
            &ssl.sig_alg,
            &ssl.key_alg,
        ]
        .into_iter()
        .flatten()
        {
            assert!(
                !text.is_empty()
                    && text.len() <= MAX_TLV_TEXT
                    && !text.chars().any(char::is_control),
                "{text:?}"
            );
        }
        if let Some(cn) = ssl.verified_cn() {
            assert_eq!(Some(cn), ssl.cn.as_deref());
            assert!((ssl.cert_in_connection || ssl.cert_in_session) && ssl.verified);
        }
    }
    // Every shorter prefix needs more (checked fully for short headers, sampled otherwise).
    let step = (h.len / 256).max(1);
    for i in (0..h.len).step_by(step) {
        assert_eq!(
            parse(&data[..i]),
            Parsed::NeedMore,
            "prefix {i} of a {}-byte header",
            h.len
        );
    }
});
