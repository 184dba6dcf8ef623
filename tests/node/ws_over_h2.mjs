// WebSocket over HTTP/2 (RFC 8441) with Node's own HTTP/2 client: the server's SETTINGS
// must allow extended CONNECT; a CONNECT with `:protocol: websocket` opens a JSON-RPC
// session on one stream, and on the same connection a plain POST runs beside it. The
// session subscribes to events, the POST creates a VM, and the event arrives on the
// session's stream. Frames are RFC 6455's, masked by the client, written here.
// Usage: node ws_over_h2.mjs http://HOST:PORT   Prints one JSON object.
import http2 from "node:http2";
import { frame, unframe } from "./ws_frames.mjs";

const url = process.argv[2];
const fail = (why) => {
  console.error("FAIL", why);
  process.exit(1);
};
setTimeout(() => fail("timed out; " + JSON.stringify(out)), 20000).unref();
const out = { settings: null, status: null, protocol: null, results: {}, event: null, post: null };

const client = http2.connect(url);
client.on("error", (e) => fail("connection: " + e.message));
client.once("remoteSettings", (settings) => {
  out.settings = { enableConnectProtocol: settings.enableConnectProtocol };
  if (!settings.enableConnectProtocol) fail("no SETTINGS_ENABLE_CONNECT_PROTOCOL");
  const ws = client.request({
    ":method": "CONNECT",
    ":protocol": "websocket",
    ":scheme": "http",
    ":path": "/",
    "sec-websocket-version": "13",
    "sec-websocket-protocol": "jsonrpc",
  });
  ws.on("error", (e) => fail("stream: " + e.message));
  ws.on("response", (h) => {
    out.status = h[":status"];
    out.protocol = h["sec-websocket-protocol"] ?? null;
    ws.write(frame(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "echo", params: [2 ** 53 - 1] })));
    ws.write(frame(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "whoami" })));
    ws.write(frame(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "subscribe", params: ["|virt|"] })));
  });
  let buf = Buffer.alloc(0);
  ws.on("data", (chunk) => {
    let msgs;
    [msgs, buf] = unframe(Buffer.concat([buf, chunk]));
    for (const m of msgs) {
      if (m.opcode !== 1) continue;
      const v = JSON.parse(m.data.toString());
      if (v.id !== undefined) {
        out.results[v.id] = v.result ?? v.error;
        if (v.id === 3) post();
      } else if (v.method && v.method.startsWith("|virt|VM_status|h2-ws-vm")) {
        out.event = v.method;
        finish();
      }
    }
  });
  out.ws = ws;
});

/** A POST on the same HTTP/2 connection, beside the session's stream. */
function post() {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "VM.create", params: ["h2-ws-vm", "n", 64] });
  const req = client.request({ ":method": "POST", ":path": "/", "content-type": "application/json" });
  let text = "";
  req.on("data", (c) => (text += c));
  req.on("end", () => {
    out.post = JSON.parse(text).result?.vmId ?? text;
  });
  req.end(body);
}

function finish() {
  const ws = out.ws;
  delete out.ws;
  // Clean up the VM the test made, then close.
  const req = client.request({ ":method": "POST", ":path": "/", "content-type": "application/json" });
  req.on("data", () => {});
  req.on("end", () => {
    console.log(JSON.stringify(out));
    ws.close();
    client.close();
    process.exit(0);
  });
  req.end(JSON.stringify({ jsonrpc: "2.0", id: 10, method: "VM.destroy", params: ["h2-ws-vm"] }));
}
