// @stomp/stompjs on Node's `ws`, dialling rpcmux's Unix-domain socket file (`ws+unix:`):
// STOMP over WebSocket over the socket, a call answered with the caller's credentials.
// Usage: node stomp_unix.mjs /path/to.sock   Prints "ok stomp-unix PEER" on success.
import { Client } from "@stomp/stompjs";
import WebSocket from "ws";

const path = process.argv[2];
const fail = (why) => {
  console.error("FAIL", why);
  process.exit(1);
};
setTimeout(() => fail("timed out"), 20000).unref();

const client = new Client({
  webSocketFactory: () => new WebSocket(`ws+unix://${path}:/stomp`, ["v12.stomp"]),
  connectHeaders: { host: "localhost" },
  heartbeatIncoming: 0,
  heartbeatOutgoing: 0,
  reconnectDelay: 0,
  debug: () => {},
});

client.onConnect = () => {
  client.subscribe("/queue/unix-replies", (m) => {
    const body = JSON.parse(m.body);
    if (body.id !== 1 || !String(body.result?.peer).startsWith("unix(uid=")) {
      fail("unexpected reply " + m.body);
    }
    console.log("ok stomp-unix " + body.result.peer);
    client.deactivate().then(() => process.exit(0));
  });
  client.publish({
    destination: "jms.topic.vdsm_requests",
    headers: { "reply-to": "/queue/unix-replies", "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", method: "whoami", id: 1 }),
  });
};
client.onStompError = (f) => fail("STOMP error " + f.body);
client.onWebSocketError = (e) => fail("WebSocket error " + (e.message || e));
client.activate();
