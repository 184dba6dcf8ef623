//! One client per protocol for the bypass matrix, over blocking sockets bound to a
//! chosen 127.0.0.x source (the server throttles failed logins per address, so each
//! cell of the matrix gets its own). Each logs in its protocol's way (HTTP
//! `Authorization`, STOMP CONNECT `login`/`passcode`, `rpc.login`) and turns every reply
//! into an [`Answer`], so an attack reads the same whatever carries it. `rpcmux_client`
//! cannot send credentials, batches or STOMP logins, hence these raw frames.

use crate::common::hostile::{dial_from, post_bytes, read_response, ANSWER_TIMEOUT, MIB};
use crate::common::ws;
use base64::Engine;
use bytes::BytesMut;
use rpcmux_stomp::{Command, Frame, Item, StompCodec};
use serde_json::{json, Value as J};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use tokio_util::codec::{Decoder, Encoder};

const REQUESTS: &str = "jms.topic.vdsm_requests";
const RESPONSES: &str = "jms.topic.vdsm_responses";
const EVENTS: &str = "jms.queue.events";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    XmlHttp,
    JsonHttp,
    JsonTcp,
    Msgpack,
    Stomp,
    JsonWs,
    StompWs,
}

impl Proto {
    pub const ALL: [Proto; 7] = [
        Proto::XmlHttp,
        Proto::JsonHttp,
        Proto::JsonTcp,
        Proto::Msgpack,
        Proto::Stomp,
        Proto::JsonWs,
        Proto::StompWs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Proto::XmlHttp => "xmlrpc-http",
            Proto::JsonHttp => "jsonrpc-http",
            Proto::JsonTcp => "jsonrpc-tcp",
            Proto::Msgpack => "msgpack-tcp",
            Proto::Stomp => "stomp",
            Proto::JsonWs => "jsonrpc-ws",
            Proto::StompWs => "stomp-ws",
        }
    }

    /// Can this protocol's connections receive events?
    pub fn carries_events(self) -> bool {
        !matches!(self, Proto::XmlHttp | Proto::JsonHttp)
    }
}

/// What a client proves itself with.
#[derive(Debug, Clone)]
pub enum Creds {
    None,
    Password(String, String),
    Token(String),
}

/// One call's outcome, whatever the protocol.
#[derive(Debug, Clone)]
pub enum Answer {
    Ok(J),
    /// An error reply: its code and message.
    Err(i64, String),
    /// No reply to the call itself: HTTP 401/429/503, a STOMP ERROR, a closed socket.
    Refused(String),
}

/// A protocol client. `batch` is a JSON-RPC batch (msgpack: a pipeline of requests sent
/// back to back, which the server may group as a batch); `None` where there is neither.
pub trait Wire {
    fn call(&mut self, method: &str, params: J) -> Answer;
    fn batch(&mut self, _calls: &[(&str, J)]) -> Option<Vec<Answer>> {
        None
    }
    /// Ask for events matching `pattern` (STOMP: SUBSCRIBE to the event destination,
    /// which covers every event); `None` where the protocol carries none.
    fn subscribe(&mut self, pattern: &str) -> Option<Answer> {
        let _ = pattern;
        None
    }
    /// The names of the events received so far and until one named `last` arrives.
    fn events_until(&mut self, last: &str) -> Result<Vec<String>, String> {
        Err(format!("no events on this protocol (waited for {last})"))
    }
    /// The names of the events received so far (met while waiting for replies).
    fn take_events(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// A connection and how its login went (`Ok` also when there was nothing to prove).
pub struct Opened {
    pub wire: Box<dyn Wire>,
    pub login: Result<(), String>,
}

/// Connect to `server` from `from` with `proto`, proving `creds` its way.
pub fn open(proto: Proto, server: SocketAddr, from: IpAddr, creds: &Creds) -> Opened {
    match try_open(proto, server, from, creds) {
        Ok(o) => o,
        Err(e) => Opened {
            wire: Box::new(Dead(e.clone())),
            login: Err(e),
        },
    }
}

fn try_open(
    proto: Proto,
    server: SocketAddr,
    from: IpAddr,
    creds: &Creds,
) -> Result<Opened, String> {
    let ok = |wire: Box<dyn Wire>| Opened {
        wire,
        login: Ok(()),
    };
    let stream = || dial_from(from, server, ANSWER_TIMEOUT).map_err(|e| format!("connect: {e}"));
    Ok(match proto {
        Proto::XmlHttp | Proto::JsonHttp => ok(Box::new(Http {
            server,
            from,
            authorization: authorization(creds),
            xml: proto == Proto::XmlHttp,
        })),
        Proto::JsonTcp => {
            let s = stream()?;
            let r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
            rpc_login(JsonStream::new(Lines { s, r }), creds, true)
        }
        Proto::Msgpack => rpc_login(Msgpack::new(stream()?), creds, false),
        Proto::JsonWs => {
            let extra = authorization(creds)
                .map(|a| format!("Authorization: {a}\r\n"))
                .unwrap_or_default();
            match Ws::upgrade(stream()?, &extra)? {
                Ok(ws) => ok(Box::new(JsonStream::new(ws))),
                Err(status) => Opened {
                    login: Err(status.clone()),
                    wire: Box::new(Dead(status)),
                },
            }
        }
        Proto::Stomp => stomp(Tcp(stream()?), creds)?,
        Proto::StompWs => match Ws::upgrade(stream()?, "Sec-WebSocket-Protocol: v12.stomp\r\n")? {
            Ok(ws) => stomp(ws, creds)?,
            Err(status) => return Err(format!("STOMP over WebSocket upgrade: {status}")),
        },
    })
}

/// `Basic base64(user:password)` or `Bearer TOKEN`.
fn authorization(creds: &Creds) -> Option<String> {
    match creds {
        Creds::None => None,
        Creds::Password(u, p) => Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
        )),
        Creds::Token(t) => Some(format!("Bearer {t}")),
    }
}

/// `rpc.login` on a connection that has no headers: by name on JSON-RPC, by position
/// (user, password, token) on msgpack-rpc.
fn rpc_login(mut w: impl Wire + 'static, creds: &Creds, named: bool) -> Opened {
    let params = match (creds, named) {
        (Creds::None, _) => None,
        (Creds::Password(u, p), true) => Some(json!({"user": u, "password": p})),
        (Creds::Password(u, p), false) => Some(json!([u, p])),
        (Creds::Token(t), true) => Some(json!({ "token": t })),
        (Creds::Token(t), false) => Some(json!([null, null, t])),
    };
    let login = match params.map(|p| w.call("rpc.login", p)) {
        None | Some(Answer::Ok(_)) => Ok(()),
        Some(other) => Err(format!("rpc.login: {other:?}")),
    };
    Opened {
        wire: Box::new(w),
        login,
    }
}

/// A connection that could not be opened: every call is refused with why.
struct Dead(String);

impl Wire for Dead {
    fn call(&mut self, _: &str, _: J) -> Answer {
        Answer::Refused(self.0.clone())
    }
    fn batch(&mut self, calls: &[(&str, J)]) -> Option<Vec<Answer>> {
        Some(vec![Answer::Refused(self.0.clone()); calls.len()])
    }
    fn subscribe(&mut self, _: &str) -> Option<Answer> {
        Some(Answer::Refused(self.0.clone()))
    }
    fn events_until(&mut self, _: &str) -> Result<Vec<String>, String> {
        Err(self.0.clone())
    }
}

fn jsonrpc(id: u64, method: &str, params: &J) -> J {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A JSON-RPC reply object as an answer.
fn answer(v: &J) -> Answer {
    match v.get("error") {
        Some(e) => Answer::Err(
            e["code"].as_i64().unwrap_or(0),
            e["message"].as_str().unwrap_or("").to_owned(),
        ),
        None => Answer::Ok(v.get("result").cloned().unwrap_or(J::Null)),
    }
}

/// A batch reply (members matched by id, 1..=n) as answers in request order; a single
/// error object (the whole batch refused) is every member's answer.
fn batch_answers(reply: &J, n: usize) -> Vec<Answer> {
    match reply.as_array() {
        Some(members) => (1..=n as u64)
            .map(|id| {
                members
                    .iter()
                    .find(|m| m["id"] == id)
                    .map(answer)
                    .unwrap_or_else(|| Answer::Refused(format!("no member with id {id}")))
            })
            .collect(),
        None => vec![answer(reply); n],
    }
}

// ---------------------------------------------------------------------------------------
// HTTP: one request per connection, the credentials in each.

struct Http {
    server: SocketAddr,
    from: IpAddr,
    authorization: Option<String>,
    xml: bool,
}

impl Http {
    fn post(&self, body: &[u8]) -> Result<Vec<u8>, Answer> {
        let mut s = dial_from(self.from, self.server, ANSWER_TIMEOUT)
            .map_err(|e| Answer::Refused(format!("connect: {e}")))?;
        let ctype = if self.xml {
            "text/xml"
        } else {
            "application/json"
        };
        let mut headers = vec![("Content-Type", ctype)];
        if let Some(a) = &self.authorization {
            headers.push(("Authorization", a));
        }
        // A server that refuses before reading the body may close first: the reply counts.
        let _ = s.write_all(&post_bytes(&headers, body));
        let r = read_response(&mut s, 16 * MIB).map_err(Answer::Refused)?;
        if r.status != 200 {
            // The challenges (one per scheme) and Retry-After, for the attacks to read.
            let said: Vec<&str> = r
                .head
                .lines()
                .filter(|l| {
                    let l = l.to_ascii_lowercase();
                    l.starts_with("www-authenticate:") || l.starts_with("retry-after:")
                })
                .collect();
            return Err(Answer::Refused(format!(
                "HTTP {} ({}): {}",
                r.status,
                said.join("; "),
                r.text().trim()
            )));
        }
        Ok(r.body)
    }
}

impl Wire for Http {
    fn call(&mut self, method: &str, params: J) -> Answer {
        if self.xml {
            let values: Vec<rpcmux::Value> = match serde_json::from_value(params) {
                Ok(v) => v,
                Err(e) => return Answer::Refused(format!("params for XML-RPC: {e}")),
            };
            let mut body = Vec::new();
            rpcmux_xmlrpc::write_call(&mut body, method, &values);
            let body = match self.post(&body) {
                Ok(b) => b,
                Err(a) => return a,
            };
            return match rpcmux_xmlrpc::parse_response(&body, &Default::default()) {
                Ok(Ok(v)) => Answer::Ok(serde_json::to_value(&v).unwrap()),
                Ok(Err(e)) => Answer::Err(e.code, e.message),
                Err(e) => Answer::Refused(format!("bad XML-RPC reply: {e:?}")),
            };
        }
        match self.post(jsonrpc(1, method, &params).to_string().as_bytes()) {
            Ok(body) => match serde_json::from_slice(&body) {
                Ok(v) => answer(&v),
                Err(e) => Answer::Refused(format!("reply not JSON: {e}")),
            },
            Err(a) => a,
        }
    }

    fn batch(&mut self, calls: &[(&str, J)]) -> Option<Vec<Answer>> {
        if self.xml {
            return None;
        }
        let body: Vec<J> = (1..)
            .zip(calls)
            .map(|(i, (m, p))| jsonrpc(i, m, p))
            .collect();
        Some(match self.post(J::from(body).to_string().as_bytes()) {
            Ok(b) => match serde_json::from_slice(&b) {
                Ok(v) => batch_answers(&v, calls.len()),
                Err(e) => vec![Answer::Refused(format!("reply not JSON: {e}")); calls.len()],
            },
            Err(a) => vec![a; calls.len()],
        })
    }
}

// ---------------------------------------------------------------------------------------
// JSON-RPC on a stream (raw TCP lines, WebSocket messages, STOMP SEND/MESSAGE).

/// Moves JSON texts: one per line, message or frame.
trait Carrier {
    fn send(&mut self, text: &[u8]) -> Result<(), String>;
    fn recv(&mut self) -> Result<Vec<u8>, String>;
    /// Ask for events matching `pattern`; `None`: with the `subscribe` verb.
    fn subscribe(&mut self, _pattern: &str) -> Option<Answer> {
        None
    }
}

struct JsonStream<C> {
    c: C,
    next_id: u64,
    events: Vec<String>,
    dead: Option<String>,
}

impl<C: Carrier> JsonStream<C> {
    fn new(c: C) -> Self {
        JsonStream {
            c,
            next_id: 100,
            events: Vec::new(),
            dead: None,
        }
    }

    /// Send `text`, then read until `done` says a message is the reply; notifications
    /// met meanwhile are kept as events.
    fn exchange(&mut self, text: &[u8], done: impl Fn(&J) -> bool) -> Result<J, String> {
        if let Some(d) = &self.dead {
            return Err(d.clone());
        }
        let r = self.c.send(text).and_then(|()| loop {
            let m = self.next()?;
            if done(&m) {
                break Ok(m);
            }
        });
        if let Err(e) = &r {
            self.dead = Some(e.clone());
        }
        r
    }

    /// The next message that is not an event (events are kept).
    fn next(&mut self) -> Result<J, String> {
        loop {
            if let Some(m) = self.one()? {
                return Ok(m);
            }
        }
    }

    /// One message: `None` for an event (kept).
    fn one(&mut self) -> Result<Option<J>, String> {
        let raw = self.c.recv()?;
        let m: J = serde_json::from_slice(&raw)
            .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(&raw)))?;
        match (m.get("method").and_then(J::as_str), m.get("id")) {
            (Some(name), None) => {
                self.events.push(name.to_owned());
                Ok(None)
            }
            _ => Ok(Some(m)),
        }
    }
}

impl<C: Carrier> Wire for JsonStream<C> {
    fn call(&mut self, method: &str, params: J) -> Answer {
        self.next_id += 1;
        let id = self.next_id;
        let text = jsonrpc(id, method, &params).to_string();
        match self.exchange(text.as_bytes(), |m| m["id"] == id) {
            Ok(m) => answer(&m),
            Err(e) => Answer::Refused(e),
        }
    }

    fn batch(&mut self, calls: &[(&str, J)]) -> Option<Vec<Answer>> {
        let body: Vec<J> = (1..)
            .zip(calls)
            .map(|(i, (m, p))| jsonrpc(i, m, p))
            .collect();
        let text = J::from(body).to_string();
        Some(
            match self.exchange(text.as_bytes(), |m| m.is_array() || m["id"].is_null()) {
                Ok(m) => batch_answers(&m, calls.len()),
                Err(e) => vec![Answer::Refused(e); calls.len()],
            },
        )
    }

    fn subscribe(&mut self, pattern: &str) -> Option<Answer> {
        Some(match self.c.subscribe(pattern) {
            Some(a) => a,
            None => self.call("subscribe", json!([pattern])),
        })
    }

    fn events_until(&mut self, last: &str) -> Result<Vec<String>, String> {
        while !self.events.iter().any(|e| e == last) {
            if let Some(m) = self.one()? {
                return Err(format!(
                    "a message that is no event while waiting for {last}: {m}"
                ));
            }
        }
        Ok(std::mem::take(&mut self.events))
    }

    fn take_events(&mut self) -> Vec<String> {
        std::mem::take(&mut self.events)
    }
}

/// Raw-TCP JSON-RPC: one message per line.
struct Lines {
    s: TcpStream,
    r: BufReader<TcpStream>,
}

impl Carrier for Lines {
    fn send(&mut self, text: &[u8]) -> Result<(), String> {
        let mut line = text.to_vec();
        line.push(b'\n');
        self.s.write_all(&line).map_err(|e| format!("send: {e}"))
    }

    fn recv(&mut self) -> Result<Vec<u8>, String> {
        let mut line = Vec::new();
        match (&mut self.r)
            .take(16 * MIB as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => Err("connection closed".into()),
            Ok(_) => Ok(line),
            Err(e) => Err(format!("no reply line: {e}")),
        }
    }
}

/// A WebSocket client connection (RFC 6455 frames from tests/common/ws.rs).
struct Ws {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Ws {
    /// Upgrade on `s`; `Ok(Err(head))` when the server answered other than 101.
    fn upgrade(mut s: TcpStream, extra: &str) -> Result<Result<Ws, String>, String> {
        s.write_all(ws::upgrade_request("/", extra).as_bytes())
            .map_err(|e| format!("upgrade: {e}"))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut chunk) {
                Ok(0) => return Err("closed during the upgrade".into()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("no upgrade reply: {e}")),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        if !head.starts_with("HTTP/1.1 101") {
            return Ok(Err(head.lines().next().unwrap_or("").to_owned()));
        }
        Ok(Ok(Ws {
            s,
            buf: buf[end..].to_vec(),
        }))
    }
}

impl Carrier for Ws {
    fn send(&mut self, text: &[u8]) -> Result<(), String> {
        self.s
            .write_all(&ws::encode(true, 1, text))
            .map_err(|e| format!("send: {e}"))
    }

    /// The next data message (pings skipped); a close is an error with its code.
    fn recv(&mut self) -> Result<Vec<u8>, String> {
        loop {
            if let Some((f, used)) = ws::decode(&self.buf) {
                self.buf.drain(..used);
                match f.opcode {
                    8 => return Err(format!("WebSocket closed ({:?})", f.close_code())),
                    9 | 10 => continue,
                    _ => return Ok(f.payload),
                }
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("connection closed".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("no WebSocket message: {e}")),
            }
        }
    }
}

/// Bytes on a plain TCP stream (STOMP's carrier).
struct Tcp(TcpStream);

impl Carrier for Tcp {
    fn send(&mut self, b: &[u8]) -> Result<(), String> {
        self.0.write_all(b).map_err(|e| format!("send: {e}"))
    }

    fn recv(&mut self) -> Result<Vec<u8>, String> {
        let mut chunk = vec![0u8; 65536];
        match self.0.read(&mut chunk) {
            Ok(0) => Err("connection closed".into()),
            Ok(n) => Ok(chunk[..n].to_vec()),
            Err(e) => Err(format!("no STOMP bytes: {e}")),
        }
    }
}

/// STOMP 1.2 over bytes (TCP, or WebSocket messages): JSON-RPC in SEND frames with
/// `reply-to`, answers and events in MESSAGE frames.
struct Stomp<B> {
    b: B,
    codec: StompCodec,
    buf: BytesMut,
    subscribed: bool,
}

/// CONNECT (with `login`/`passcode` from `creds`); the login fails on an ERROR frame.
fn stomp<B: Carrier + 'static>(b: B, creds: &Creds) -> Result<Opened, String> {
    let limits = rpcmux_stomp::Limits {
        max_frame: 16 * MIB,
        ..Default::default()
    };
    let mut st = Stomp {
        b,
        codec: StompCodec::new(limits),
        buf: BytesMut::new(),
        subscribed: false,
    };
    let mut connect = Frame::new(Command::Connect)
        .header("accept-version", "1.2")
        .header("host", "localhost");
    match creds {
        Creds::None => {}
        Creds::Password(u, p) => {
            connect.push_header("login", u);
            connect.push_header("passcode", p);
        }
        Creds::Token(t) => connect.push_header("passcode", t),
    }
    st.frame_out(&connect)?;
    let login = match st.frame_in() {
        Ok(f) if f.command == Command::Connected => Ok(()),
        Ok(f) => Err(format!(
            "{:?}: {}",
            f.command,
            f.get("message").unwrap_or_default()
        )),
        Err(e) => Err(e),
    };
    if login.is_ok() {
        st.frame_out(
            &Frame::new(Command::Subscribe)
                .header("id", "replies")
                .header("destination", RESPONSES),
        )?;
    }
    Ok(Opened {
        wire: Box::new(JsonStream::new(st)),
        login,
    })
}

impl<B: Carrier> Stomp<B> {
    fn frame_out(&mut self, f: &Frame) -> Result<(), String> {
        let mut out = BytesMut::new();
        self.codec.encode(f, &mut out).map_err(|e| e.to_string())?;
        self.b.send(&out)
    }

    /// The next frame (heart-beats skipped).
    fn frame_in(&mut self) -> Result<Frame, String> {
        loop {
            match self.codec.decode(&mut self.buf) {
                Ok(Some(Item::Frame(f))) => return Ok(f),
                Ok(Some(Item::Heartbeat)) => continue,
                Ok(None) => {}
                Err(e) => return Err(format!("bad STOMP: {e}")),
            }
            let more = self.b.recv()?;
            self.buf.extend_from_slice(&more);
        }
    }
}

impl<B: Carrier> Carrier for Stomp<B> {
    fn send(&mut self, text: &[u8]) -> Result<(), String> {
        self.frame_out(
            &Frame::new(Command::Send)
                .header("destination", REQUESTS)
                .header("reply-to", RESPONSES)
                .header("content-type", "application/json")
                .with_body(text.to_vec()),
        )
    }

    /// The next MESSAGE's body (a reply or an event); an ERROR ends the session.
    fn recv(&mut self) -> Result<Vec<u8>, String> {
        loop {
            let f = self.frame_in()?;
            match f.command {
                Command::Message => return Ok(f.body.to_vec()),
                Command::Error => {
                    return Err(format!(
                        "STOMP ERROR: {}",
                        f.get("message").unwrap_or_default()
                    ))
                }
                _ => continue,
            }
        }
    }

    /// SUBSCRIBE to the event destination (every event the connection may see), as
    /// VDSM's clients do; answered by its RECEIPT.
    fn subscribe(&mut self, _pattern: &str) -> Option<Answer> {
        if std::mem::replace(&mut self.subscribed, true) {
            return Some(Answer::Ok(J::Bool(true)));
        }
        let f = Frame::new(Command::Subscribe)
            .header("id", "events")
            .header("destination", EVENTS)
            .header("receipt", "subscribed");
        if let Err(e) = self.frame_out(&f) {
            return Some(Answer::Refused(e));
        }
        Some(loop {
            match self.frame_in() {
                Ok(f) if f.command == Command::Receipt => break Answer::Ok(J::Bool(true)),
                Ok(f) if f.command == Command::Error => {
                    break Answer::Err(0, f.get("message").unwrap_or_default().to_owned())
                }
                Ok(_) => continue,
                Err(e) => break Answer::Refused(e),
            }
        })
    }
}

// ---------------------------------------------------------------------------------------
// MessagePack-RPC

struct Msgpack {
    s: TcpStream,
    codec: rpcmux_msgpack_rpc::MsgpackRpcCodec,
    buf: BytesMut,
    next_id: u32,
    events: Vec<String>,
    dead: Option<String>,
}

impl Msgpack {
    fn new(s: TcpStream) -> Self {
        let limits = rpcmux_msgpack_rpc::Limits {
            max_message: 16 * MIB,
            ..Default::default()
        };
        Msgpack {
            s,
            codec: rpcmux_msgpack_rpc::MsgpackRpcCodec::new(limits),
            buf: BytesMut::new(),
            next_id: 100,
            events: Vec::new(),
            dead: None,
        }
    }

    fn send(&mut self, method: &str, params: J) -> Result<u32, String> {
        let params: Vec<rpcmux::Value> =
            serde_json::from_value(params).map_err(|e| format!("params for msgpack: {e}"))?;
        self.next_id += 1;
        let mut out = BytesMut::new();
        rpcmux_msgpack_rpc::encode_request(&mut out, self.next_id, method, &params)
            .map_err(|e| e.to_string())?;
        self.s.write_all(&out).map_err(|e| format!("send: {e}"))?;
        Ok(self.next_id)
    }

    /// The next response (events met meanwhile are kept).
    fn response(&mut self) -> Result<(u32, Answer), String> {
        loop {
            if let Some(r) = self.one()? {
                return Ok(r);
            }
        }
    }

    /// One message: `None` for an event (kept).
    fn one(&mut self) -> Result<Option<(u32, Answer)>, String> {
        let mut chunk = vec![0u8; 65536];
        loop {
            match self.codec.decode(&mut self.buf) {
                Ok(Some(rpcmux_msgpack_rpc::Message::Response {
                    msgid,
                    error,
                    result,
                })) => {
                    let a = if error == rpcmux::Value::Nil {
                        Answer::Ok(serde_json::to_value(&result).unwrap())
                    } else {
                        let e = rpcmux_msgpack_rpc::value_to_error(&error);
                        Answer::Err(e.code, e.message)
                    };
                    return Ok(Some((msgid, a)));
                }
                Ok(Some(rpcmux_msgpack_rpc::Message::Notification { method, .. })) => {
                    self.events.push(method);
                    return Ok(None);
                }
                Ok(Some(other)) => return Err(format!("unexpected {other:?}")),
                Ok(None) => match self.s.read(&mut chunk) {
                    Ok(0) => return Err("connection closed".into()),
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                    Err(e) => return Err(format!("no msgpack-rpc reply: {e}")),
                },
                Err(e) => return Err(format!("bad msgpack-rpc: {e}")),
            }
        }
    }

    /// Send every call, then read every response (by msgid, in request order).
    fn pipeline(&mut self, calls: &[(&str, J)]) -> Vec<Answer> {
        let run = |m: &mut Self| -> Result<Vec<Answer>, String> {
            if let Some(d) = &m.dead {
                return Err(d.clone());
            }
            let ids = calls
                .iter()
                .map(|(name, p)| m.send(name, p.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            let mut got = Vec::new();
            while got.len() < ids.len() {
                got.push(m.response()?);
            }
            Ok(ids
                .iter()
                .map(|id| {
                    got.iter()
                        .find(|(m, _)| m == id)
                        .map(|(_, a)| a.clone())
                        .unwrap_or_else(|| Answer::Refused(format!("no response to {id}")))
                })
                .collect())
        };
        match run(self) {
            Ok(a) => a,
            Err(e) => {
                self.dead = Some(e.clone());
                vec![Answer::Refused(e); calls.len()]
            }
        }
    }
}

impl Wire for Msgpack {
    fn call(&mut self, method: &str, params: J) -> Answer {
        self.pipeline(&[(method, params)]).remove(0)
    }

    fn batch(&mut self, calls: &[(&str, J)]) -> Option<Vec<Answer>> {
        Some(self.pipeline(calls))
    }

    fn subscribe(&mut self, pattern: &str) -> Option<Answer> {
        Some(self.call("subscribe", json!([pattern])))
    }

    fn events_until(&mut self, last: &str) -> Result<Vec<String>, String> {
        while !self.events.iter().any(|e| e == last) {
            if let Some((id, a)) = self.one()? {
                return Err(format!("a response ({id}: {a:?}) while waiting for {last}"));
            }
        }
        Ok(std::mem::take(&mut self.events))
    }

    fn take_events(&mut self) -> Vec<String> {
        std::mem::take(&mut self.events)
    }
}
