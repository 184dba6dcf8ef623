// WebSocket frames (RFC 6455) for the tests' own clients on Node's HTTP/2 streams:
// the client's masked text frames and the server's unmasked frames read back.
import crypto from "node:crypto";

/** One masked text frame. */
export function frame(text) {
  const payload = Buffer.from(text);
  const mask = crypto.randomBytes(4);
  let head;
  if (payload.length < 126) {
    head = Buffer.from([0x81, 0x80 | payload.length]);
  } else {
    head = Buffer.alloc(4);
    head[0] = 0x81;
    head[1] = 0x80 | 126;
    head.writeUInt16BE(payload.length, 2);
  }
  const body = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) body[i] = payload[i] ^ mask[i % 4];
  return Buffer.concat([head, mask, body]);
}

/** Complete unmasked frames off the front of `buf`: [messages, rest]. */
export function unframe(buf) {
  const msgs = [];
  for (;;) {
    if (buf.length < 2) break;
    let len = buf[1] & 0x7f;
    let at = 2;
    if (len === 126) {
      if (buf.length < 4) break;
      len = buf.readUInt16BE(2);
      at = 4;
    } else if (len === 127) {
      if (buf.length < 10) break;
      len = Number(buf.readBigUInt64BE(2));
      at = 10;
    }
    if (buf.length < at + len) break;
    msgs.push({ opcode: buf[0] & 0x0f, data: buf.subarray(at, at + len) });
    buf = buf.subarray(at + len);
  }
  return [msgs, buf];
}
