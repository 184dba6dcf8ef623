// The rpcmux console: verbs (rpc.discover), a call form (JSON-RPC over HTTP POST), and
// live events (JSON-RPC over WebSocket, `subscribe ["*"]`). No framework, no CDN.
"use strict";

let nextId = 1;
const $ = (id) => document.getElementById(id);

async function post(method, params) {
  const body = { jsonrpc: "2.0", method, id: nextId++ };
  if (params !== undefined) body.params = params;
  const r = await fetch("/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return r.json();
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

async function loadVerbs() {
  const box = $("verbs");
  try {
    const r = await post("rpc.discover");
    if (r.error) throw new Error(r.error.message);
    box.replaceChildren(...r.result.methods.map(verbRow));
  } catch (e) {
    // Servers without rpc.discover: the names alone.
    try {
      const r = await post("system.listMethods");
      box.replaceChildren(...r.result.map((name) => verbRow({ name })));
    } catch (e2) {
      box.textContent = "cannot list verbs: " + e2.message;
    }
  }
}

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
  const ws = new WebSocket(url, ["jsonrpc"]);
  ws.onopen = () => {
    $("wsstate").textContent = "(live)";
    ws.send(JSON.stringify({ jsonrpc: "2.0", method: "subscribe", params: ["*"], id: 0 }));
  };
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id !== undefined) return; // the subscribe reply
    const pre = document.createElement("pre");
    pre.className = "event";
    pre.textContent = new Date().toLocaleTimeString() + " " + msg.method + "\n" + JSON.stringify(msg.params);
    const box = $("events");
    box.prepend(pre);
    while (box.childElementCount > 200) box.lastChild.remove();
  };
  ws.onclose = () => {
    $("wsstate").textContent = "(disconnected; retrying)";
    setTimeout(connectEvents, 2000);
  };
}

loadVerbs();
connectEvents();
