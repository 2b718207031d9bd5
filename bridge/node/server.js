// The bridge served over HTTP: a (req, res) handler for node:http or Express.
// Invariant: a request body larger than the bridge reads (1 MB) is refused with 413 without reading it whole (at
// once, unread, when its Content-Length says so), a body something else already read (a body parser mounted
// before the kit) is refused with a 500 saying so rather than waited for, a status request is verified against
// the whole path the engine asked for (Express's originalUrl under a mount path), and every answer it writes is a
// JSON object with its length. A request Node's own HTTP parser refuses (a malformed or repeated Content-Length,
// headers too large) never reaches handler(): Node answers it a bare 400 unless the server listens with
// clientError (server.on('clientError', clientError)), which answers it a JSON 400 (431 for headers too large).
import { Answer } from './answers.js';

export const MAX_BODY_BYTES = 1024 * 1024;
const READ_ALREADY = 'the request body was read before the bridge kit got it (express.json() or another body parser '
  + 'mounted first): mount handler(bridge) before any body parser, or on its own path: app.use(\'/actions\', handler(bridge))';

function send(res, answer, close = false) {
  const payload = answer.payload();
  res.writeHead(answer.status, {
    'Content-Type': 'application/json', 'Content-Length': payload.length, ...(close ? { Connection: 'close' } : {}),
  });
  res.end(payload);
}

function tooLarge() {
  return new Answer({ reason: `the body is larger than ${MAX_BODY_BYTES} bytes` }, 413);
}

export function handler(bridge) {
  return (req, res) => {
    const target = req.originalUrl ?? req.url; // Express strips its mount path from req.url; the engine signed it
    // a body parser sets req.body even for a GET it did not read (body-parser 1.x: {}), so only a POST's counts
    if (req.readableEnded || (req.method === 'POST' && req.body !== undefined)) {
      send(res, new Answer({ reason: READ_ALREADY }, 500));
      return;
    }
    if (Number(req.headers['content-length']) > MAX_BODY_BYTES) {
      send(res, tooLarge(), true); // the unread body goes with the connection
      return;
    }
    const chunks = [];
    let size = 0;
    let refused = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES && !refused) {
        refused = true;
        send(res, tooLarge());
        req.destroy();
      } else if (!refused) {
        chunks.push(chunk);
      }
    });
    req.on('end', async () => {
      if (refused) return;
      try {
        send(res, await bridge.handle(req.method, target, req.headers, Buffer.concat(chunks)));
      } catch (failure) {
        bridge.onError(`event_bridge: ${req.method} ${target}: the bridge failed`, failure);
        send(res, new Answer({ reason: `the bridge failed: ${failure}`.slice(0, 500) }, 500));
      }
    });
  };
}

// server.on('clientError', clientError): a request Node's parser refuses is answered in JSON, and the connection closed
export function clientError(failure, socket) {
  if (!socket.writable || failure.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const tooLarge = failure.code === 'HPE_HEADER_OVERFLOW';
  const payload = Buffer.from(JSON.stringify({
    reason: tooLarge ? 'the request headers are too large' : `the request is not valid HTTP (${failure.code ?? 'malformed'})`,
  }));
  socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\n`
    + `Content-Type: application/json\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n`), payload]));
}
