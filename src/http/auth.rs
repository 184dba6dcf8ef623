//! Credentials on HTTP (`--auth`): `Authorization: Basic` (what stock XML-RPC clients
//! send for `http://user:pass@host/`) and `Authorization: Bearer <JWT>`, checked before
//! a request's body is read. Missing or wrong credentials get `401` with
//! `WWW-Authenticate`, so stock clients raise their usual error; too many failures
//! `429`, too many verifications waiting `503`, each with `Retry-After`.

use crate::conn::ConnInfo;
use crate::http::reply::{text, ReplyBody};
use crate::shared::Shared;
use base64::Engine;
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};
use rpcmux_auth::{Credentials, Failure, Principal};
use std::net::IpAddr;
use std::sync::Mutex;

/// The `Authorization` a connection sent last and the principal it proved: a
/// keep-alive client pays for its credentials once, not per request (a password's
/// argon2 verification takes tens of milliseconds on purpose; a Bearer token's
/// signature check is remembered the same way). Good for the policy generation it was
/// proved under only ([`rpcmux_auth::Auth::generation`]): after a reload (SIGHUP) an
/// open connection proves its credentials again, so a changed password or a removed
/// user stops working on live connections too.
#[derive(Default)]
pub(crate) struct Memo(Mutex<Option<(HeaderValue, Principal, u64)>>);

impl Memo {
    fn get(&self, header: &HeaderValue, generation: u64) -> Option<Principal> {
        let memo = self.0.lock().ok()?;
        let (h, p, g) = memo.as_ref()?;
        (h == header && *g == generation && p.is_current()).then(|| p.clone())
    }

    /// Remember `p`, proved under `generation` (read before verifying: a proof that
    /// straddles a reload is not remembered as the new policy's).
    fn put(&self, header: &HeaderValue, p: &Principal, generation: u64) {
        if let Ok(mut memo) = self.0.lock() {
            *memo = Some((header.clone(), p.clone(), generation));
        }
    }
}

/// Who sends this request: `Ok(None)` when authentication is off or the request
/// carries no credentials the connection's own principal (anonymous, or its verified
/// certificate or uid) does not already settle; `Ok(Some(principal))` for the principal
/// its `Authorization` proved; `Err(reply)` for the refusal to send instead of serving
/// it. The request's caller is made from it where every caller is
/// ([`crate::shared::Shared::call_context`]).
pub(crate) async fn authenticate(
    headers: &HeaderMap,
    shared: &Shared,
    info: &ConnInfo,
    memo: &Memo,
) -> Result<Option<Principal>, Box<Response<ReplyBody>>> {
    let Some(auth) = &shared.auth else {
        return Ok(None);
    };
    let Some(header) = headers.get(AUTHORIZATION) else {
        // A certificate proves a principal; with none, anonymous callers are served if
        // the credentials file lets them call anything at all.
        if info.principal.is_some() || auth.allows_anonymous() {
            return Ok(None);
        }
        return Err(challenge(
            shared,
            "credentials required (Authorization: Basic or Bearer)\n",
            false,
        ));
    };
    let generation = auth.generation();
    if let Some(p) = memo.get(header, generation) {
        return Ok(Some(p));
    }
    let Some(credentials) = parse(header) else {
        return Err(challenge(
            shared,
            "unsupported Authorization header: use Basic (user:password) or Bearer (a JWT)\n",
            false,
        ));
    };
    let source: IpAddr = info.peer.throttle_ip();
    match shared.verbs.login(auth, &credentials, source).await {
        Ok(p) => {
            memo.put(header, &p, generation);
            Ok(Some(p))
        }
        Err(f @ Failure::Throttled { retry_after }) => Err(retry(
            StatusCode::TOO_MANY_REQUESTS,
            &f,
            retry_after.as_secs().max(1),
        )),
        Err(f @ Failure::Busy) => Err(retry(StatusCode::SERVICE_UNAVAILABLE, &f, 1)),
        Err(f) => {
            let token = matches!(credentials, Credentials::Token(_));
            Err(challenge(shared, &format!("{f}\n"), token))
        }
    }
}

/// The credentials in an `Authorization` value; `None` for another scheme or a
/// malformed one.
fn parse(header: &HeaderValue) -> Option<Credentials> {
    let value = header.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("basic") {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        let (user, password) = text.split_once(':')?;
        Some(Credentials::Password {
            user: user.to_owned(),
            password: password.to_owned(),
        })
    } else if scheme.eq_ignore_ascii_case("bearer") && !rest.is_empty() {
        Some(Credentials::Token(rest.to_owned()))
    } else {
        None
    }
}

/// `401` with a challenge for each scheme the server takes (`Bearer` only when the
/// credentials file has a `[jwt]` section; `error="invalid_token"` for a token that
/// failed, RFC 6750).
fn challenge(shared: &Shared, why: &str, bad_token: bool) -> Box<Response<ReplyBody>> {
    let mut r = text(StatusCode::UNAUTHORIZED, why);
    let h = r.headers_mut();
    h.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"rpcmux\", charset=\"UTF-8\""),
    );
    if shared.auth.as_ref().is_some_and(|a| a.accepts_tokens()) {
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(if bad_token {
                "Bearer realm=\"rpcmux\", error=\"invalid_token\""
            } else {
                "Bearer realm=\"rpcmux\""
            }),
        );
    }
    Box::new(r)
}

fn retry(status: StatusCode, why: &Failure, secs: u64) -> Box<Response<ReplyBody>> {
    let mut r = text(status, &format!("{why}\n"));
    r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
    Box::new(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(v: &str) -> Option<Credentials> {
        parse(&HeaderValue::from_str(v).unwrap())
    }

    #[test]
    fn basic_and_bearer_are_read_others_are_not() {
        // "alice:pa:ss" — a password may hold a colon; the user name may not.
        match creds("Basic YWxpY2U6cGE6c3M=") {
            Some(Credentials::Password { user, password }) => {
                assert_eq!((user.as_str(), password.as_str()), ("alice", "pa:ss"))
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(creds("bearer abc.def.ghi"), Some(Credentials::Token(t)) if t == "abc.def.ghi")
        );
        assert!(creds("Basic !!!").is_none());
        assert!(creds("Basic YWxpY2U=").is_none(), "no colon");
        assert!(creds("Digest username=x").is_none());
        assert!(creds("Bearer ").is_none());
    }
}
