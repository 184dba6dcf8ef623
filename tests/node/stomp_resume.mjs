// Issue 40 with @stomp/stompjs (STOMP over WebSocket, Node's `ws`): subscribe to the
// event destination, and on every (re)connect subscribe again with a `since` header =
// the last `event-id` received, so a reconnect after a cut misses nothing. The test
// runs the server behind a proxy (PROXY_WS_URL) and cuts it for 3 s when this script
// prints "cut"; the events are published straight to the server (SERVER_URL, JSON-RPC
// over HTTP) before, during and after the cut.
// Usage: node stomp_resume.mjs SERVER_URL PROXY_WS_URL
// Prints "cut", then one JSON line: {ns, ids, unique, connects}.
import { Client } from "@stomp/stompjs";
import WebSocket from "ws";

const [server, url] = process.argv.slice(2);
const fail = (why) => {
  console.error("FAIL", why);
  process.exit(1);
};
setTimeout(() => fail("timed out; got " + JSON.stringify(ns)), 60000).unref();

const ns = [];
const ids = [];
const seen = new Set();
let last = null;
let connects = 0;
let closed = 0;

async function publish(n) {
  const r = await fetch(server + "/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", method: "Host.publishEvent", params: { name: "|t|" + n, params: { n } }, id: n }),
  });
  const body = await r.json();
  if (body.result === undefined) fail("publish: " + JSON.stringify(body));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, ok, ms = 30000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) fail("waiting for " + what + "; got " + JSON.stringify(ns));
    await sleep(20);
  }
}

const client = new Client({
  webSocketFactory: () => new WebSocket(url, ["v12.stomp"]),
  connectHeaders: { host: "localhost" },
  heartbeatIncoming: 0,
  heartbeatOutgoing: 0,
  reconnectDelay: 300,
  debug: () => {},
});
client.onConnect = () => {
  connects++;
  const headers = last ? { since: last } : {};
  client.subscribe(
    "jms.queue.events",
    (m) => {
      const id = m.headers["event-id"];
      // At-least-once on the wire: an id seen already is not counted again.
      if (seen.has(id)) return;
      seen.add(id);
      last = id;
      ids.push(id);
      const body = JSON.parse(m.body);
      if (body.method.startsWith("|t|")) ns.push(body.params.n);
    },
    headers,
  );
};
client.onWebSocketClose = () => closed++;
client.activate();

await until("connected", () => connects === 1);
// The SUBSCRIBE goes out before the first publish gets there? Give it a moment.
await sleep(200);
for (let n = 1; n <= 30; n++) await publish(n);
await until("the first 30", () => ns.length >= 30);
console.log("cut");
await until("the cut", () => closed > 0);
for (let n = 31; n <= 80; n++) {
  await publish(n);
  await sleep(20);
}
await until("all 80 after the reconnect", () => ns.length >= 80);
for (let n = 81; n <= 90; n++) await publish(n);
await until("the live ones", () => ns.length >= 90);
await sleep(300);
await client.deactivate();
console.log(JSON.stringify({ ns, ids: ids.length, unique: seen.size, connects }));
process.exit(0);
