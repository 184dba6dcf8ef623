// STOMP 1.2 delivery rules with @stomp/stompjs on Node's `ws` (issue: deliveries lost
// when several subscriptions covered one destination):
//   1. a spy subscribed to the shared reply destination after the caller's own
//      subscription: a reply answers one request, so only the first made gets it;
//   2. VDSM's client-test layout: replies and events both on jms.queue.events, two
//      subscriptions there: the event reaches each, the reply the first only (VDSM's
//      client fails every later call once a reply reaches it twice);
//   3. a reply-to containing ':' (stompjs escapes it as \c on the wire): answered;
//   4. a parent subscription made first (step 1's), then one on the exact reply-to
//      `jms.topic.vdsm_responses.node:colon`: the reply goes to the most specific one,
//      the exact (issue 46: the parent made first took it, and stompjs's own
//      subscription never got its reply).
// Usage: node stomp_delivery.mjs ws://HOST:PORT/   Prints "ok stomp-delivery ..." on success.
import { Client } from "@stomp/stompjs";
import WebSocket from "ws";

const url = process.argv[2];
const fail = (why) => {
  console.error("FAIL", why);
  process.exit(1);
};
setTimeout(() => fail("timed out; got " + JSON.stringify(got)), 20000).unref();

// Deliveries seen: "<subscription name>:<id or event>".
const got = [];
const seen = (label) => got.filter((g) => g === label).length;

const client = new Client({
  webSocketFactory: () => new WebSocket(url, ["v12.stomp"]),
  connectHeaders: { host: "localhost" },
  heartbeatIncoming: 0,
  heartbeatOutgoing: 0,
  reconnectDelay: 0,
  debug: () => {},
});

function send(method, params, id, replyTo) {
  client.publish({
    destination: "jms.topic.vdsm_requests",
    headers: { "reply-to": replyTo, "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", method, params, id }),
  });
}

function until(cond, what) {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (cond()) {
        clearInterval(t);
        clearTimeout(late);
        resolve();
      }
    }, 20);
    const late = setTimeout(() => {
      clearInterval(t);
      fail(what + "; got " + JSON.stringify(got));
    }, 8000);
    late.unref();
  });
}

const record = (name) => (m) => {
  const body = JSON.parse(m.body);
  got.push(name + ":" + (body.id !== undefined ? body.id : body.method));
};

client.onConnect = async () => {
  // 1. The caller's subscription and a spy on the same reply destination.
  client.subscribe("jms.topic.vdsm_responses", record("own"));
  client.subscribe("jms.topic.vdsm_responses", record("spy"));
  send("ping", [], "p1", "jms.topic.vdsm_responses");
  await until(() => seen("own:p1") === 1, "reply to the first subscription");

  // 3. An escaped reply-to: a destination below the reply topic whose name has a ':'.
  send("ping", [], "p2", "jms.topic.vdsm_responses.client:42");
  await until(() => seen("own:p2") === 1, "reply to an escaped reply-to");

  // 4. The exact reply-to subscribed after its parent ("own", step 1): the exact one
  //    gets the reply, the parent does not.
  client.subscribe("jms.topic.vdsm_responses.node:colon", record("exact"));
  send("ping", [], "p4", "jms.topic.vdsm_responses.node:colon");
  await until(() => seen("exact:p4") === 1, "reply to the exact reply-to subscription");

  // 2. VDSM's layout: replies and events on jms.queue.events, two subscriptions there.
  client.subscribe("jms.queue.events", record("ev1"));
  client.subscribe("jms.queue.events", record("ev2"));
  send("VM.create", { vmID: "delivery-vm", name: "n", memSize: 64 }, "c1", "jms.queue.events");
  const event = "|virt|VM_status|delivery-vm";
  await until(
    () =>
      seen("ev1:c1") === 1 && seen("ev1:" + event) === 1 && seen("ev2:" + event) === 1,
    "VM.create's reply on the first jms.queue.events subscription, its event on both",
  );
  send("VM.destroy", ["delivery-vm"], "d1", "jms.queue.events");
  await until(() => seen("ev1:d1") === 1, "VM.destroy's reply");
  // Replies never went to a second subscription.
  for (const stray of ["spy:p1", "spy:p2", "own:p4", "spy:p4", "ev2:c1", "ev2:d1"]) {
    if (seen(stray)) fail("a reply reached a second subscription: " + stray);
  }
  // Nothing was delivered twice to one subscription.
  const counts = {};
  for (const g of got) counts[g] = (counts[g] || 0) + 1;
  const dup = Object.entries(counts).filter(([k, n]) => n > 1 && !k.includes("|virt|"));
  if (dup.length) fail("delivered twice: " + JSON.stringify(dup));
  console.log("ok stomp-delivery", got.length);
  await client.deactivate();
  process.exit(0);
};
client.onStompError = (f) => fail("STOMP ERROR " + f.headers.message + " " + f.body);
client.onWebSocketError = (e) => fail("WebSocket error " + (e.message || e));
client.activate();
