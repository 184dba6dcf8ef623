// The rpcmux console: verbs (rpc.discover), a call form (JSON-RPC over HTTP POST), and
// live events (JSON-RPC over WebSocket, `subscribe ["*"]`). No framework, no CDN.
//
// With `--auth` the page itself needs no credentials. A sign-in form takes a user and
// password, or a token; they live in `creds` only (no storage: gone with the page). Each
// POST sends them as `Authorization`; the WebSocket, which a browser cannot give headers,
// proves them with `rpc.login` after the upgrade, then lists the verbs (only those the
// principal may call) and subscribes. Whether the server takes credentials is asked over
// the WebSocket too, so no POST goes out without them to meet a 401, which would make the
// browser show its own password dialog.
//
// Events lose nothing across a reconnect (issue 40): the subscription is resumable, so
// each event carries `event_id` (ORIGIN-SEQ); when the socket closes the page connects
// again with backoff and subscribes with `since` = the last id it showed, and the server
// replays what it missed. An id shown already is not shown again. When the server no
// longer retains that far back (-32007), or dropped this page for falling behind
// (`events.lost`), the pane says so.
"use strict";

const NOT_AUTHENTICATED = -32020;
const METHOD_NOT_FOUND = -32601;
const SINCE_TOO_OLD = -32007;

let nextId = 1;
const $ = (id) => document.getElementById(id);

/** {user, password} or {token} once signed in; null before. Memory only. */
let creds = null;
/** The events socket, and its calls waiting for their reply, by id. */
let ws = null;
const waiting = new Map();
/** The last event id shown (where a resume starts), and per publishing instance the
 * highest sequence number shown (ids are ordered per instance). */
let lastEventId = null;
const shownSeq = new Map();
/** The wait before connecting the events socket again: doubles per try, up to 10 s. */
let backoff = 500;

function authorization() {
  if (!creds) return {};
  if (creds.token) return { authorization: "Bearer " + creds.token };
  // UTF-8, as the server reads it (btoa alone takes Latin-1 only).
  const bytes = new TextEncoder().encode(creds.user + ":" + creds.password);
  return { authorization: "Basic " + btoa(String.fromCharCode(...bytes)) };
}

/** A call over HTTP POST; HTTP refusals (401, 429, 503) come back as JSON-RPC errors. */
async function post(method, params) {
  const body = { jsonrpc: "2.0", method, id: nextId++ };
  if (params !== undefined) body.params = params;
  const r = await fetch("/", {
    method: "POST",
    headers: { "content-type": "application/json", ...authorization() },
    body: JSON.stringify(body),
  });
  if ((r.headers.get("content-type") || "").startsWith("application/json")) return r.json();
  const code = r.status === 401 ? NOT_AUTHENTICATED : r.status;
  return { error: { code, message: "HTTP " + r.status + ": " + (await r.text()).trim() } };
}

/** A call over the events socket. */
function wsCall(method, params) {
  return new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    const msg = { jsonrpc: "2.0", method, id };
    if (params !== undefined) msg.params = params;
    ws.send(JSON.stringify(msg));
  });
}

function verbRow(m) {
  const div = document.createElement("div");
  div.className = "verb";
  const name = document.createElement("b");
  name.textContent = m.name;
  const help = document.createElement("small");
  help.textContent = m.summary || m.description || "";
  div.append(name, help);
  div.addEventListener("click", () => {
    document.querySelectorAll(".verb.on").forEach((v) => v.classList.remove("on"));
    div.classList.add("on");
    $("method").value = m.name;
    $("help").textContent = help.textContent;
    const names = (m.params || []).map((p) => p.name);
    $("params").value = names.length ? JSON.stringify(Object.fromEntries(names.map((n) => [n, null]))) : "[]";
  });
  return div;
}

/** The verbs this caller may call: `{methods}`, or the `{error}` that stopped it. */
async function listVerbs(call) {
  const r = await call("rpc.discover");
  if (r.result) return { methods: r.result.methods };
  if (r.error.code === NOT_AUTHENTICATED) return r;
  // Servers without rpc.discover: the names alone.
  const names = await call("system.listMethods");
  if (names.result) return { methods: names.result.map((name) => ({ name })) };
  return names;
}

/** Show the verbs; false when the server wants credentials first. */
async function showVerbs(call) {
  const r = await listVerbs(call);
  if (r.error && r.error.code === NOT_AUTHENTICATED) {
    signedOut(creds ? r.error.message : "");
    return false;
  }
  if (r.error) $("verbs").textContent = "cannot list verbs: " + r.error.message;
  else $("verbs").replaceChildren(...r.methods.map(verbRow));
  return true;
}

function signedOut(why) {
  creds = null;
  $("signin").hidden = false;
  $("who").hidden = true;
  $("signin-error").textContent = why;
  $("verbs").textContent = "sign in to see the verbs";
  $("wsstate").textContent = "(sign in for events)";
}

function signedIn(principal) {
  $("signin").hidden = true;
  $("who").hidden = false;
  $("principal").textContent = principal;
  $("signin-error").textContent = "";
  // The form keeps no secret once it is in `creds`.
  $("password").value = "";
  $("token").value = "";
}

/** On each WebSocket open: prove the credentials, list the verbs, subscribe. */
async function session() {
  if (creds) {
    const r = await wsCall("rpc.login", creds);
    if (r.error) return signedOut(r.error.message);
    signedIn(r.result.principal);
  } else {
    // Only a server with `--auth` has rpc.login: offer to sign in there.
    const probe = await wsCall("rpc.login");
    $("signin").hidden = !probe.error || probe.error.code === METHOD_NOT_FOUND;
  }
  if (!(await showVerbs(wsCall))) return;
  const s = await subscribeEvents();
  $("wsstate").textContent = s.error ? "(no events: " + s.error.message + ")" : "(live)";
}

/** Subscribe to every event, resuming after the last one shown when there is one. */
async function subscribeEvents() {
  const fresh = { pattern: "*", resumable: true };
  if (!lastEventId) return wsCall("subscribe", fresh);
  const s = await wsCall("subscribe", { pattern: "*", since: lastEventId });
  if (!s.error || s.error.code !== SINCE_TOO_OLD) return s;
  showNote("events were missed while disconnected: " + s.error.message);
  lastEventId = null;
  return wsCall("subscribe", fresh);
}

/** A line in the events pane that is not an event. */
function showNote(text) {
  const pre = document.createElement("pre");
  pre.className = "note err";
  pre.textContent = new Date().toLocaleTimeString() + " " + text;
  $("events").prepend(pre);
}

/** Show a notification: an event once (by id), or the notice of events lost. */
function showEvent(msg) {
  if (msg.method === "events.lost") {
    // The server closes the socket after it; the reconnect resumes from lastEventId.
    const p = msg.params || {};
    showNote("events lost (" + p.reason + ", from " + p.first_lost + "); resuming");
    return;
  }
  const params = msg.params;
  let id = null;
  if (params && typeof params === "object" && typeof params.event_id === "string") {
    id = params.event_id;
    delete params.event_id;
    const [origin, seq] = id.split("-");
    if ((shownSeq.get(origin) || 0) >= Number(seq)) return;
    shownSeq.set(origin, Number(seq));
    lastEventId = id;
  }
  const pre = document.createElement("pre");
  pre.className = "event";
  if (id) pre.dataset.eventId = id;
  pre.textContent = new Date().toLocaleTimeString() + " " + msg.method + "\n" + JSON.stringify(params);
  const box = $("events");
  box.prepend(pre);
  while (box.childElementCount > 200) box.lastChild.remove();
}

$("signin").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const user = $("user").value.trim();
  const password = $("password").value;
  const token = $("token").value.trim();
  const bad = token || (user && password) ? "" : "a user and password, or a token";
  if (bad || (!token && user.includes(":"))) {
    $("signin-error").textContent = bad || "a user name cannot hold ':' (HTTP Basic)";
    return;
  }
  creds = token ? { token } : { user, password };
  $("signin-error").textContent = "signing in...";
  if (ws && ws.readyState === WebSocket.OPEN) return session();
  // No events socket: prove them over HTTP.
  if (await showVerbs(post)) signedIn(creds.user || "(token)");
});

$("signout").addEventListener("click", () => {
  signedOut("");
  // The socket keeps the principal it proved: a fresh, anonymous one replaces it.
  if (ws) ws.close();
});

$("call").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const out = $("reply");
  let params;
  const text = $("params").value.trim();
  try {
    params = text ? JSON.parse(text) : undefined;
  } catch (e) {
    out.className = "err";
    out.textContent = "params are not JSON: " + e.message;
    return;
  }
  out.className = "";
  out.textContent = "...";
  try {
    const r = await post($("method").value.trim(), params);
    out.className = r.error ? "err" : "";
    out.textContent = JSON.stringify(r, null, 2);
  } catch (e) {
    out.className = "err";
    out.textContent = "call failed: " + e.message;
  }
});

function connectEvents() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/";
  const sock = new WebSocket(url, ["jsonrpc"]);
  let opened = false;
  sock.onopen = () => {
    opened = true;
    ws = sock;
    backoff = 500;
    session();
  };
  sock.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id !== undefined) {
      const done = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (done) done(msg);
      return;
    }
    showEvent(msg);
  };
  sock.onclose = () => {
    if (ws === sock) ws = null;
    for (const done of waiting.values()) done({ error: { code: 0, message: "connection closed" } });
    waiting.clear();
    // No WebSocket at all (a proxy that does not pass upgrades): the verbs over HTTP.
    if (!opened && !creds && $("verbs").textContent === "loading verbs...") showVerbs(post);
    $("wsstate").textContent = "(disconnected; retrying)";
    setTimeout(connectEvents, backoff);
    backoff = Math.min(backoff * 2, 10000);
  };
}

connectEvents();
