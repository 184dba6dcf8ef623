//! The checker's clients: each protocol that carries events, written by hand over a
//! blocking socket so that the checker sees exactly what the server wrote and in which
//! order (a client library may reorder or hide a reply and its events, which is what I3
//! is about). Everything read is turned into one [`Msg`].

use crate::common::ws;
use crate::model::{parse_id, Id};
use serde_json::{json, Value as Json};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A protocol, and the shape its subscriptions ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    JsonTcp {
        notify: bool,
    },
    Msgpack {
        notify: bool,
    },
    WsJson {
        notify: bool,
    },
    /// STOMP subscribes to every event (`jms.queue.events`).
    Stomp,
}

impl Proto {
    pub const ALL: [Proto; 7] = [
        Proto::JsonTcp { notify: false },
        Proto::JsonTcp { notify: true },
        Proto::Msgpack { notify: false },
        Proto::Msgpack { notify: true },
        Proto::WsJson { notify: false },
        Proto::WsJson { notify: true },
        Proto::Stomp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Proto::JsonTcp { notify: false } => "jsonrpc-tcp",
            Proto::JsonTcp { notify: true } => "jsonrpc-tcp/notify",
            Proto::Msgpack { notify: false } => "msgpack",
            Proto::Msgpack { notify: true } => "msgpack/notify",
            Proto::WsJson { notify: false } => "ws",
            Proto::WsJson { notify: true } => "ws/notify",
            Proto::Stomp => "stomp",
        }
    }

    fn notify(self) -> bool {
        matches!(
            self,
            Proto::JsonTcp { notify: true }
                | Proto::Msgpack { notify: true }
                | Proto::WsJson { notify: true }
        )
    }
}

/// What the server sent, as the checker needs it.
#[derive(Debug)]
pub enum Msg {
    /// A reply: its request id, and its result or error code.
    Reply { id: u64, result: Result<Json, i64> },
    /// An event; `sub` when the shape names the subscription.
    Event {
        id: Id,
        name: String,
        tag: String,
        sub: Option<u64>,
    },
    /// `events.lost` / STOMP ERROR with `first-lost`.
    Lost { first_lost: Id },
    /// Any other STOMP ERROR (a refused SUBSCRIBE: its code).
    StompError { receipt: Option<u64>, code: i64 },
}

/// One connection.
pub struct Wire {
    pub proto: Proto,
    s: TcpStream,
    buf: Vec<u8>,
    next_id: u64,
}

/// The event destination STOMP subscribes to.
const EVENTS: &str = "jms.queue.events";

impl Wire {
    /// Connect (and for STOMP, log in; for WebSocket, upgrade).
    pub fn connect(proto: Proto, addr: SocketAddr) -> std::io::Result<Wire> {
        Self::connect_with(proto, addr, None)
    }

    /// [`Wire::connect`] with a receive buffer of `rcvbuf` bytes: a client that stops
    /// reading then backs the server up after kilobytes, not megabytes, so a pause
    /// overflows its outbox within a schedule's few hundred events.
    pub fn connect_with(
        proto: Proto,
        addr: SocketAddr,
        rcvbuf: Option<usize>,
    ) -> std::io::Result<Wire> {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        if let Some(n) = rcvbuf {
            sock.set_recv_buffer_size(n)?;
        }
        sock.connect(&addr.into())?;
        let s: TcpStream = sock.into();
        s.set_nodelay(true)?;
        let mut w = Wire {
            proto,
            s,
            buf: Vec::new(),
            next_id: 0,
        };
        match proto {
            Proto::WsJson { .. } => {
                w.s.write_all(ws::upgrade_request("/", "").as_bytes())?;
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    if let Some(i) = w.buf.windows(4).position(|x| x == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&w.buf[..i]).into_owned();
                        w.buf.drain(..i + 4);
                        if !head.starts_with("HTTP/1.1 101") {
                            return Err(std::io::Error::other(head));
                        }
                        break;
                    }
                    if Instant::now() > deadline || !w.fill(Duration::from_millis(200))? {
                        return Err(std::io::Error::other("no upgrade"));
                    }
                }
            }
            Proto::Stomp => {
                w.s.write_all(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")?;
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    if let Some((cmd, _, _, used)) = stomp_frame(&w.buf) {
                        w.buf.drain(..used);
                        if cmd != "CONNECTED" {
                            return Err(std::io::Error::other(cmd));
                        }
                        break;
                    }
                    if Instant::now() > deadline || !w.fill(Duration::from_millis(200))? {
                        return Err(std::io::Error::other("no CONNECTED"));
                    }
                }
            }
            _ => {}
        }
        Ok(w)
    }

    /// Send `subscribe(pattern, since, resumable)` (STOMP: SUBSCRIBE with a receipt);
    /// the request id its reply comes under. `since`: `None` live, `Some("0")`, an id.
    pub fn subscribe(&mut self, pattern: &str, since: Option<&str>) -> std::io::Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        if self.proto == Proto::Stomp {
            let since = since.map_or(String::new(), |s| format!("since:{s}\n"));
            let f = format!("SUBSCRIBE\ndestination:{EVENTS}\nid:{id}\nreceipt:{id}\n{since}\n\0");
            return self.s.write_all(f.as_bytes()).map(|_| id);
        }
        let mut p = json!({"pattern": pattern, "resumable": true});
        if let Some(s) = since {
            p["since"] = json!(s);
        }
        let notify = self.proto.notify().then_some("sub");
        if let Some(n) = notify {
            p["notify"] = json!(n);
        }
        let positional = json!([pattern, since, true, notify]);
        self.call(id, "subscribe", p, positional).map(|_| id)
    }

    /// Send `unsubscribe(sub)` (STOMP: UNSUBSCRIBE with a receipt).
    pub fn unsubscribe(&mut self, sub: u64) -> std::io::Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        if self.proto == Proto::Stomp {
            let f = format!("UNSUBSCRIBE\nid:{sub}\nreceipt:{id}\n\n\0");
            return self.s.write_all(f.as_bytes()).map(|_| id);
        }
        self.call(id, "unsubscribe", json!({"id": sub}), json!([sub]))
            .map(|_| id)
    }

    /// Send `Host.publishEvent(name, {"tag": tag, "pad": ...})` (not over STOMP).
    pub fn publish(&mut self, name: &str, tag: &str, pad: usize) -> std::io::Result<u64> {
        self.next_id += 1;
        let id = self.next_id;
        let params = json!({"tag": tag, "pad": "x".repeat(pad)});
        let named = json!({"name": name, "params": params});
        let positional = json!([name, params]);
        self.call(id, "Host.publishEvent", named, positional)
            .map(|_| id)
    }

    /// Send a call: named params in JSON, positional ones in msgpack-rpc.
    fn call(
        &mut self,
        id: u64,
        method: &str,
        params: Json,
        positional: Json,
    ) -> std::io::Result<()> {
        match self.proto {
            Proto::JsonTcp { .. } => {
                let mut line =
                    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                        .to_string();
                line.push('\n');
                self.s.write_all(line.as_bytes())
            }
            Proto::WsJson { .. } => {
                let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                    .to_string();
                self.s.write_all(&ws::encode(true, 1, text.as_bytes()))
            }
            Proto::Msgpack { .. } => {
                // [0, msgid, method, [params...]]: msgpack-rpc's params are positional.
                let v: rpcmux_value::Value = serde_json::from_value(positional).expect("params");
                let mut out = vec![0x94, 0x00];
                rmp::encode::write_uint(&mut out, id).unwrap();
                rmp::encode::write_str(&mut out, method).unwrap();
                rpcmux_msgpack_rpc::write_value(&mut out, &v).unwrap();
                self.s.write_all(&out)
            }
            Proto::Stomp => unreachable!("STOMP calls are frames of their own"),
        }
    }

    /// Read more bytes, waiting at most `wait`; false once the server closed.
    fn fill(&mut self, wait: Duration) -> std::io::Result<bool> {
        self.s
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
        let mut chunk = [0u8; 65536];
        match self.s.read(&mut chunk) {
            Ok(0) => Ok(false),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The next message, waiting at most `wait`: `Ok(None)` when none came in time,
    /// `Err` once the connection is closed.
    pub fn next(&mut self, wait: Duration) -> Result<Option<Msg>, ()> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(m) = self.take() {
                return Ok(Some(m));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.fill(left) {
                Ok(true) => {}
                _ => return self.take().map(Some).ok_or(()),
            }
        }
    }

    /// A whole message from the buffer, if one is there (frames that carry nothing the
    /// checker needs, such as pings and heart-beats, are skipped).
    fn take(&mut self) -> Option<Msg> {
        loop {
            let (msg, used) = match self.proto {
                Proto::JsonTcp { .. } => {
                    let end = self.buf.iter().position(|&b| b == b'\n')?;
                    let v: Json = serde_json::from_slice(&self.buf[..end]).expect("a JSON line");
                    (json_msg(v), end + 1)
                }
                Proto::WsJson { .. } => {
                    let (f, used) = ws::decode(&self.buf)?;
                    let m = (f.opcode == 1).then(|| json_msg(f.json())).flatten();
                    (m, used)
                }
                Proto::Msgpack { .. } => {
                    let (v, used) = match rpcmux_msgpack_rpc::read_value(&self.buf, 64) {
                        Ok(x) => x,
                        Err(_) => return None,
                    };
                    (msgpack_msg(serde_json::to_value(&v).expect("JSON")), used)
                }
                Proto::Stomp => {
                    let (cmd, headers, body, used) = stomp_frame(&self.buf)?;
                    (stomp_msg(&cmd, &headers, &body), used)
                }
            };
            self.buf.drain(..used);
            if msg.is_some() {
                return msg;
            }
        }
    }

    /// Close the socket (a cut: the server sees EOF or a reset).
    pub fn cut(self) {
        let _ = self.s.shutdown(std::net::Shutdown::Both);
    }
}

/// An event's (id, name, tag) from its name and params (`event_id`, `tag` inside).
fn event_of(name: &str, params: &Json) -> Option<(Id, String, String)> {
    let id = parse_id(params.get("event_id")?.as_str()?)?;
    let tag = params
        .get("tag")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned();
    Some((id, name.to_owned(), tag))
}

/// A JSON-RPC message as the checker needs it.
fn json_msg(v: Json) -> Option<Msg> {
    if let Some(id) = v.get("id").and_then(Json::as_u64) {
        let result = match v.get("error") {
            Some(e) if !e.is_null() => Err(e["code"].as_i64().unwrap_or(0)),
            _ => Ok(v.get("result").cloned().unwrap_or(Json::Null)),
        };
        return Some(Msg::Reply { id, result });
    }
    let method = v.get("method")?.as_str()?;
    notification(method, v.get("params")?)
}

/// A notification (either shape, or `events.lost`).
fn notification(method: &str, params: &Json) -> Option<Msg> {
    if method == "events.lost" {
        let first_lost = parse_id(params["first_lost"].as_str()?)?;
        return Some(Msg::Lost { first_lost });
    }
    if let Some(sub) = params.get("subscription").and_then(Json::as_u64) {
        let r = &params["result"];
        let (id, name, tag) = event_of(r["name"].as_str()?, &r["params"])?;
        return Some(Msg::Event {
            id,
            name,
            tag,
            sub: Some(sub),
        });
    }
    let (id, name, tag) = event_of(method, params)?;
    Some(Msg::Event {
        id,
        name,
        tag,
        sub: None,
    })
}

/// A msgpack-rpc message: `[1, id, error, result]` or `[2, method, [params]]`.
fn msgpack_msg(v: Json) -> Option<Msg> {
    let a = v.as_array()?;
    match a.first()?.as_u64()? {
        1 => {
            let id = a.get(1)?.as_u64()?;
            let result = match &a[2] {
                Json::Null => Ok(a[3].clone()),
                e => Err(e.get("code").and_then(Json::as_i64).unwrap_or(0)),
            };
            Some(Msg::Reply { id, result })
        }
        2 => notification(a.get(1)?.as_str()?, a.get(2)?.as_array()?.first()?),
        _ => None,
    }
}

/// A STOMP frame read: command, headers, body, bytes used.
type StompFrame = (String, Vec<(String, String)>, Vec<u8>, usize);

/// A STOMP frame at the start of `buf`.
fn stomp_frame(buf: &[u8]) -> Option<StompFrame> {
    // Heart-beats: bare line ends.
    let skip = buf
        .iter()
        .take_while(|&&b| b == b'\n' || b == b'\r')
        .count();
    let rest = &buf[skip..];
    let head_end = rest.windows(2).position(|w| w == b"\n\n")?;
    let head = std::str::from_utf8(&rest[..head_end]).ok()?;
    let mut lines = head.lines();
    let cmd = lines.next()?.trim_end_matches('\r').to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim_end_matches('\r').to_owned()))
        .collect();
    let body_start = head_end + 2;
    let len: Option<usize> = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok());
    let body_end = match len {
        Some(n) => {
            if rest.len() < body_start + n + 1 {
                return None;
            }
            body_start + n
        }
        None => body_start + rest[body_start..].iter().position(|&b| b == 0)?,
    };
    let body = rest[body_start..body_end].to_vec();
    Some((cmd, headers, body, skip + body_end + 1))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A STOMP frame as the checker needs it: RECEIPT as a reply, MESSAGE of an event, ERROR.
fn stomp_msg(cmd: &str, headers: &[(String, String)], body: &[u8]) -> Option<Msg> {
    match cmd {
        "RECEIPT" => {
            let id = header(headers, "receipt-id")?.parse().ok()?;
            Some(Msg::Reply {
                id,
                result: Ok(Json::Null),
            })
        }
        "MESSAGE" => {
            let id = parse_id(header(headers, "event-id")?)?;
            let v: Json = serde_json::from_slice(body).ok()?;
            let name = v["method"].as_str()?.to_owned();
            let tag = v["params"]["tag"].as_str().unwrap_or_default().to_owned();
            Some(Msg::Event {
                id,
                name,
                tag,
                sub: None,
            })
        }
        "ERROR" => {
            if let Some(first) = header(headers, "first-lost").and_then(parse_id) {
                return Some(Msg::Lost { first_lost: first });
            }
            let receipt = header(headers, "receipt-id").and_then(|r| r.parse().ok());
            let code = header(headers, "code")
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            Some(Msg::StompError { receipt, code })
        }
        _ => None,
    }
}
