//! The error codes rpcmux itself answers with, in one place.
//!
//! JSON-RPC's own codes (-32700 parse error, -32600 invalid request, -32601 method not
//! found, -32602 invalid params, -32603 internal error) come from the protocol; these are
//! rpcmux's, in the range JSON-RPC leaves to servers (-32000 to -32099). Every protocol
//! carries the same number: the JSON-RPC `error.code`, the XML-RPC `faultCode`, the
//! msgpack-rpc error's `code`.

/// Code of the error `subscribe` gets on a connection that cannot carry events (HTTP).
pub const ERR_NO_EVENTS_HERE: i64 = -32000;

/// Code of the error a call gets when the server stops before it finished.
pub const ERR_SHUTTING_DOWN: i64 = -32001;

/// Code of the error a `subscribe` past `max_subscriptions` gets.
pub const ERR_TOO_MANY_SUBSCRIPTIONS: i64 = -32002;

/// Code of the error that replaces a reply larger than `max_reply`.
pub const ERR_REPLY_TOO_LARGE: i64 = -32003;

/// Code of the error a call gets when it ran past its verb's timeout (it was cancelled).
pub const ERR_TIMEOUT: i64 = -32004;

/// Code of the error a call gets when its verb runs `max_concurrent` calls already and
/// refuses more ([`WhenBusy::Refuse`](crate::WhenBusy::Refuse)).
pub const ERR_BUSY: i64 = -32005;

/// Code of the error that replaces a big reply while the output budget is spent.
pub const ERR_OUTPUT_FULL: i64 = -32006;

/// `subscribe`'s `since` names an event older than the events retained (or one this
/// instance never had): the message names the oldest retained id.
pub const ERR_SINCE_TOO_OLD: i64 = -32007;

/// The call needs credentials and came without (or with credentials that no longer
/// hold, such as an expired token): nothing ran. Log in (HTTP `Authorization`, STOMP
/// `login`/`passcode`, `rpc.login`) and call again.
pub const ERR_NOT_AUTHENTICATED: i64 = -32020;

/// The caller's principal may not call this verb (the credentials file's `allow` and
/// `deny`): nothing ran.
pub const ERR_FORBIDDEN: i64 = -32021;

/// `rpc.login` (or STOMP `login`) with credentials that did not verify, or refused
/// for now after too many failures.
pub const ERR_LOGIN_FAILED: i64 = -32022;

/// No address of the upstream answered: none could be connected, or the connection
/// was lost with the call in flight (and the verb is not listed as idempotent).
pub const ERR_UPSTREAM_UNREACHABLE: i64 = -32010;

/// The upstream did not answer within its `timeout` (the call is abandoned; the
/// upstream may still run it).
pub const ERR_UPSTREAM_TIMEOUT: i64 = -32011;

/// The upstream already has `max_in_flight` calls forwarded to it; this one was refused
/// without being sent.
pub const ERR_UPSTREAM_OVERLOADED: i64 = -32012;

/// A JSON-RPC 1.0 upstream answered with an error that is text only (Go's
/// `net/rpc/jsonrpc` servers: `"error":"divide by zero"`): a fault of the upstream's
/// own, its text the message; the upstream gave no code, so it gets this one. (Also
/// what `rpcmux call` and the client crate read such an error as.)
pub const ERR_UPSTREAM_TEXT_FAULT: i64 = rpcmux_jsonrpc::TEXT_ERROR_CODE;

/// The upstream answered with something that is not a reply of its protocol (an HTML
/// error page, a malformed body).
pub const ERR_UPSTREAM_BAD_REPLY: i64 = -32013;
