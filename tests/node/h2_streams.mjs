// Many streams on one HTTP/2 connection, driven by a plan: POST streams and WebSocket
// sessions (RFC 8441 extended CONNECT, JSON-RPC or STOMP 1.2 in messages) opened,
// called, logged in and reset in the order the plan gives, each step awaited before the
// next. Node's own HTTP/2 client; WebSocket frames (RFC 6455, masked) and STOMP frames
// are written here. Over https:// the connection negotiates h2 by ALPN.
//
// Usage: node h2_streams.mjs URL PLAN [CA [CERT KEY]]
// PLAN is a JSON array of steps; a step with `key` has its outcome in the printed
// object's `results` under that key. Steps:
//   {op:"ws", as, sub:"jsonrpc"|"v12.stomp", auth?}      the handshake's :status
//   {op:"call", on, method, params?}                      {result} | {error:{code,message}} | {refused}
//   {op:"post", method, params?, auth?}                   {status, result | error | text}
//   {op:"stomp_connect", on, login?, passcode?}           {connected:true} | {error}
//   {op:"stomp_subscribe", on}                            SUBSCRIBE to the event destination: {receipt:true} | {error}
//   {op:"events_until", on, name, ms?}                    the names received so far, once `name` is among them | {timeout, events}
//   {op:"events", on}                                     the names received so far (taken)
//   {op:"reset", on}                                      RST_STREAM (CANCEL) on the session's stream
//   {op:"sleep", ms}
// Prints {alpn, results} as one JSON line.
import http2 from "node:http2";
import { frame, unframe } from "./ws_frames.mjs";
import fs from "node:fs";

const [url, planText, ca, cert, key] = process.argv.slice(2);
const plan = JSON.parse(planText);
const out = { alpn: null, results: {} };
const fail = (why) => {
  console.error("FAIL", why, JSON.stringify(out));
  process.exit(1);
};
setTimeout(() => fail("timed out"), 60000).unref();

const REQUESTS = "jms.topic.vdsm_requests";
const RESPONSES = "jms.topic.vdsm_responses";
const EVENTS = "jms.queue.events";
const WAIT = 10000;

/** The STOMP frames in one message: {command, headers, body}. */
function stompFrames(text) {
  const frames = [];
  for (let chunk of text.split("\0")) {
    chunk = chunk.replace(/^[\r\n]+/, "");
    if (!chunk) continue;
    const end = chunk.indexOf("\n\n");
    const head = (end < 0 ? chunk : chunk.slice(0, end)).split("\n");
    const headers = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(":");
      if (i > 0 && !(line.slice(0, i) in headers)) headers[line.slice(0, i)] = line.slice(i + 1);
    }
    frames.push({ command: head[0], headers, body: end < 0 ? "" : chunk.slice(end + 2) });
  }
  return frames;
}

function stompFrame(command, headers, body = "") {
  let s = command + "\n";
  for (const [k, v] of Object.entries(headers)) s += `${k}:${v}\n`;
  return s + "\n" + body + "\0";
}

/** A JSON-RPC reply as an outcome. */
function outcome(v) {
  return v.error ? { error: v.error } : { result: v.result ?? null };
}

/** A WebSocket session on its stream: what it received, and who waits for what. */
class Session {
  constructor(stream, stomp) {
    this.stream = stream;
    this.stomp = stomp;
    this.items = [];
    this.waiters = [];
    this.events = [];
    this.closed = null;
    this.nextId = 100;
    let buf = Buffer.alloc(0);
    stream.on("data", (chunk) => {
      let msgs;
      [msgs, buf] = unframe(Buffer.concat([buf, chunk]));
      for (const m of msgs) {
        if (m.opcode === 8) this.close(`closed by the server (${m.data.length >= 2 ? m.data.readUInt16BE(0) : "no code"})`);
        if (m.opcode === 1) this.message(m.data.toString());
      }
    });
    stream.on("close", () => this.close("stream closed"));
    stream.on("error", (e) => this.close("stream error: " + e.message));
  }

  message(text) {
    if (!this.stomp) return this.json(text);
    for (const f of stompFrames(text)) {
      if (f.command === "MESSAGE") this.json(f.body);
      else this.push({ frame: f });
    }
  }

  json(text) {
    const v = JSON.parse(text);
    if (v.id === undefined && v.method) this.events.push(v.method);
    else this.push({ reply: v });
    this.wake();
  }

  push(item) {
    this.items.push(item);
    this.wake();
  }

  close(why) {
    if (this.closed === null) this.closed = why;
    this.wake();
  }

  wake() {
    this.waiters = this.waiters.filter((w) => !w());
  }

  /** The first item `pick` accepts (taken), or null once closed or after `ms`. */
  take(pick, ms = WAIT) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(null), ms);
      const done = (v) => {
        clearTimeout(timer);
        resolve(v);
        return true;
      };
      const look = () => {
        const i = this.items.findIndex(pick);
        if (i >= 0) return done(this.items.splice(i, 1)[0]);
        if (this.closed !== null) return done(null);
        return false;
      };
      if (!look()) this.waiters.push(() => look());
    });
  }

  /** Wait until `test()` holds (true), or `ms` pass (false). */
  until(test, ms = WAIT) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      const look = () => {
        if (!test()) return false;
        clearTimeout(timer);
        resolve(true);
        return true;
      };
      if (!look()) this.waiters.push(look);
    });
  }

  send(text) {
    this.stream.write(frame(text));
  }

  async call(method, params) {
    const id = ++this.nextId;
    const body = JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
    if (this.stomp) {
      this.send(stompFrame("SEND", { destination: REQUESTS, "reply-to": RESPONSES, "content-type": "application/json" }, body));
    } else {
      this.send(body);
    }
    const got = await this.take((it) => it.reply && it.reply.id === id);
    return got ? outcome(got.reply) : { refused: this.closed ?? "no reply" };
  }

  async frame(pickCommands) {
    const got = await this.take((it) => it.frame && pickCommands.includes(it.frame.command));
    return got ? got.frame : null;
  }
}

const opts = {};
if (ca) opts.ca = fs.readFileSync(ca);
if (cert) {
  opts.cert = fs.readFileSync(cert);
  opts.key = fs.readFileSync(key);
}
const client = http2.connect(url, opts);
client.on("error", (e) => fail("connection: " + e.message));
client.on("close", () => fail("the connection closed"));
const scheme = url.startsWith("https:") ? "https" : "http";
const sessions = {};

function openWs(step) {
  return new Promise((resolve) => {
    const headers = {
      ":method": "CONNECT",
      ":protocol": "websocket",
      ":scheme": scheme,
      ":path": "/",
      "sec-websocket-version": "13",
      "sec-websocket-protocol": step.sub ?? "jsonrpc",
    };
    if (step.auth) headers.authorization = step.auth;
    const stream = client.request(headers);
    const s = new Session(stream, (step.sub ?? "jsonrpc") === "v12.stomp");
    sessions[step.as] = s;
    stream.on("response", (h) => resolve({ status: h[":status"] }));
    stream.on("close", () => resolve({ status: null, refused: s.closed }));
  });
}

function post(step) {
  return new Promise((resolve) => {
    const headers = { ":method": "POST", ":path": "/", "content-type": "application/json" };
    if (step.auth) headers.authorization = step.auth;
    const req = client.request(headers);
    let status = null;
    let text = "";
    req.on("response", (h) => (status = h[":status"]));
    req.on("data", (c) => (text += c));
    req.on("error", (e) => resolve({ status, refused: e.message }));
    req.on("end", () => {
      try {
        resolve({ status, ...outcome(JSON.parse(text)) });
      } catch {
        resolve({ status, text });
      }
    });
    const call = { jsonrpc: "2.0", id: 1, method: step.method };
    if (step.params !== undefined) call.params = step.params;
    req.end(JSON.stringify(call));
  });
}

async function run(step) {
  const s = sessions[step.on];
  switch (step.op) {
    case "ws":
      return openWs(step);
    case "post":
      return post(step);
    case "call":
      return s.call(step.method, step.params);
    case "stomp_connect": {
      const h = { "accept-version": "1.2", host: "localhost" };
      if (step.login !== undefined) h.login = step.login;
      if (step.passcode !== undefined) h.passcode = step.passcode;
      s.send(stompFrame("CONNECT", h));
      const f = await s.frame(["CONNECTED", "ERROR"]);
      if (!f || f.command !== "CONNECTED") return { error: f ? f.headers.message : s.closed };
      s.send(stompFrame("SUBSCRIBE", { id: "replies", destination: RESPONSES }));
      return { connected: true };
    }
    case "stomp_subscribe": {
      s.send(stompFrame("SUBSCRIBE", { id: "events", destination: EVENTS, receipt: "subscribed" }));
      const f = await s.frame(["RECEIPT", "ERROR"]);
      return f && f.command === "RECEIPT" ? { receipt: true } : { error: f ? f.headers.message : s.closed };
    }
    case "events_until": {
      const seen = await s.until(() => s.events.includes(step.name), step.ms ?? WAIT);
      const events = s.events.splice(0);
      return seen ? { events } : { timeout: true, events };
    }
    case "events":
      return { events: s.events.splice(0) };
    case "reset":
      s.stream.close(http2.constants.NGHTTP2_CANCEL);
      return { reset: true };
    case "sleep":
      await new Promise((r) => setTimeout(r, step.ms));
      return null;
    default:
      fail("unknown step " + JSON.stringify(step));
  }
}

// Extended CONNECT needs the server's SETTINGS (ENABLE_CONNECT_PROTOCOL) first.
client.once("remoteSettings", async (settings) => {
  if (!settings.enableConnectProtocol) fail("no SETTINGS_ENABLE_CONNECT_PROTOCOL");
  out.alpn = client.alpnProtocol ?? null;
  for (const step of plan) {
    const r = await run(step);
    if (step.key) out.results[step.key] = r;
  }
  console.log(JSON.stringify(out));
  process.exit(0);
});
