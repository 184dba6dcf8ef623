// STOMP 1.2 over WebSocket with @stomp/stompjs on Node's `ws`: CONNECT with heart-beats,
// SUBSCRIBE to replies and events, SEND JSON-RPC calls with reply-to, and receive the
// VM.create event as a MESSAGE on the event destination.
// Usage: node stomp_ws_client.mjs ws://HOST:PORT/   Prints "ok stomp-ws ..." on success.
import { Client } from "@stomp/stompjs";
import WebSocket from "ws";

const url = process.argv[2];
const fail = (why) => {
  console.error("FAIL", why);
  process.exit(1);
};
setTimeout(() => fail("timed out"), 20000).unref();

const entry = { title: "Sunrise", year: 1999, rating: 4.75, tags: ["a", "é"], big: 9007199254740991 };
const replies = new Map();
let event = null;
let done = false;

const client = new Client({
  webSocketFactory: () => new WebSocket(url, ["v12.stomp", "v11.stomp"]),
  connectHeaders: { host: "localhost" },
  heartbeatIncoming: 1000,
  heartbeatOutgoing: 1000,
  reconnectDelay: 0,
  debug: () => {},
});

function check() {
  if (done || replies.size < 2 || !event) return;
  done = true;
  const echo = replies.get("e1");
  if (JSON.stringify(echo.result) !== JSON.stringify(entry)) fail("echo: " + JSON.stringify(echo));
  const vm = replies.get("c1");
  if (!vm.result || vm.result.vmId !== "stompjs-vm") fail("VM.create: " + JSON.stringify(vm));
  if (event.params["stompjs-vm"].status !== "Up") fail("event: " + JSON.stringify(event));
  // Stay connected past two heart-beat periods: both sides' beats keep the session up.
  setTimeout(async () => {
    const r = await call("ping", [], "p1");
    if (r.result !== true) fail("ping after heart-beats: " + JSON.stringify(r));
    console.log("ok stomp-ws", client.connectedVersion, JSON.stringify([...replies.keys()]));
    await client.deactivate();
    process.exit(0);
  }, 2500);
}

const waiting = new Map();
function call(method, params, id) {
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    client.publish({
      destination: "jms.topic.vdsm_requests",
      headers: { "reply-to": "jms.topic.vdsm_responses", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", method, params, id }),
    });
  });
}

client.onConnect = () => {
  client.subscribe("jms.topic.vdsm_responses", (m) => {
    const r = JSON.parse(m.body);
    const w = waiting.get(r.id);
    if (w) {
      waiting.delete(r.id);
      w(r);
    }
  });
  client.subscribe("jms.queue.events", (m) => {
    const ev = JSON.parse(m.body);
    if (ev.method === "|virt|VM_status|stompjs-vm") {
      event = ev;
      check();
    }
  });
  call("echo", [entry], "e1").then((r) => {
    replies.set("e1", r);
    check();
  });
  call("VM.create", { vmID: "stompjs-vm", name: "n", memSize: 64 }, "c1").then((r) => {
    replies.set("c1", r);
    check();
  });
};
client.onStompError = (f) => fail("STOMP ERROR " + f.headers.message + " " + f.body);
client.onWebSocketError = (e) => fail("WebSocket error " + (e.message || e));
client.onWebSocketClose = (e) => {
  if (!done) fail("closed " + e.code + " " + e.reason);
};
client.activate();
