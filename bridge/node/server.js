// The bridge served over HTTP: a (req, res) handler for node:http or Express.
// Invariant: a request body larger than the bridge reads (1 MB) is refused with 413 without reading it whole, and
// every answer is a JSON object with its length.
import { Answer } from './answers.js';

export const MAX_BODY_BYTES = 1024 * 1024;

function send(res, answer) {
  const payload = answer.payload();
  res.writeHead(answer.status, { 'Content-Type': 'application/json', 'Content-Length': payload.length });
  res.end(payload);
}

export function handler(bridge) {
  return (req, res) => {
    const chunks = [];
    let size = 0;
    let refused = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES && !refused) {
        refused = true;
        send(res, new Answer({ reason: `the body is larger than ${MAX_BODY_BYTES} bytes` }, 413));
        req.destroy();
      } else if (!refused) {
        chunks.push(chunk);
      }
    });
    req.on('end', async () => {
      if (refused) return;
      try {
        send(res, await bridge.handle(req.method, req.url, req.headers, Buffer.concat(chunks)));
      } catch (failure) {
        send(res, new Answer({ reason: `the bridge failed: ${failure}`.slice(0, 500) }, 500));
      }
    });
  };
}
