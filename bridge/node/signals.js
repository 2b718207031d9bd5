// Sending the engine a signal from the game server, signed, and retried until the engine has it.
// Invariant: 2xx is done (a repeat answers 200 with the first receipt, so a re-send is safe); 429, a 5xx and a
// failed connection are retried with backoff for at least RETRY_SECONDS (a sleeping deployment's database takes up
// to 30 s to resume), never sooner than the answer's Retry-After says (one that asks past the retry time gives up
// at once); any other 4xx is final, thrown with the engine's own error text (its `errors`). Each request has an
// overall deadline and its answer is read up to MAX_ANSWER_BYTES.
import { createHmac } from 'node:crypto';

export const RETRY_SECONDS = 90;
export const REQUEST_SECONDS = 10;
export const MAX_ANSWER_BYTES = 64 * 1024;
export const MAX_BACKOFF_SECONDS = 15;

export class SignalRefused extends Error {
  constructor(status, error) {
    super(`the engine refused the signal: HTTP ${status}: ${error}`);
    this.status = status;
    this.error = error;
  }
}

export class SignalNotDelivered extends Error {}

export function signalHeaders(key, path, body, now = Date.now() / 1000) {
  const timestamp = String(Math.floor(now));
  const digest = createHmac('sha256', key).update(`${timestamp}.POST.${path}.`).update(body).digest('hex');
  return { 'X-Signal-Timestamp': timestamp, 'X-Signal-Signature': `sha256=${digest}` };
}

async function readCapped(response) {
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      break;
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    const answer = JSON.parse(text);
    return typeof answer === 'object' && answer !== null ? answer : { error: String(answer) };
  } catch {
    return { error: text.slice(0, 200) };
  }
}

// The engine's own error text: its `errors` (docs/api.md, "Errors"), else an `error` or `message`.
function said(answer) {
  if (Array.isArray(answer.errors) && answer.errors.length) return answer.errors.join('; ');
  return answer.error || answer.message || JSON.stringify(answer);
}

// POST {apiUrl}/runs/{runId}/signals/{name} signed with the signal key; resolves to the engine's answer.
export async function sendSignal(apiUrl, key, runId, name, body = {}, {
  retrySeconds = RETRY_SECONDS, sleep = (s) => new Promise((r) => setTimeout(r, s * 1000)), monotonic = () => performance.now() / 1000,
} = {}) {
  const path = `/runs/${Number(runId)}/signals/${encodeURIComponent(name)}`;
  const payload = Buffer.from(JSON.stringify(body));
  const started = monotonic();
  let backoff = 1;
  let last = 'nothing';
  for (;;) {
    let status = 0;
    let retryAfter = null;
    try {
      const response = await fetch(apiUrl.replace(/\/+$/, '') + path, {
        method: 'POST', body: payload, redirect: 'manual', signal: AbortSignal.timeout(REQUEST_SECONDS * 1000),
        headers: { 'Content-Type': 'application/json', ...signalHeaders(key, path, payload) },
      });
      status = response.status;
      const answer = await readCapped(response);
      if (status >= 200 && status < 300) return answer;
      if (status !== 429 && status < 500) throw new SignalRefused(status, said(answer));
      const header = response.headers.get('retry-after');
      retryAfter = header && /^\d+$/.test(header) ? Number(header) : null;
      last = `HTTP ${status}: ${said(answer)}${retryAfter === null ? '' : ` (Retry-After: ${retryAfter} s)`}`;
    } catch (failure) {
      if (failure instanceof SignalRefused) throw failure;
      last = String(failure);
    }
    const wait = retryAfter ?? backoff;
    if (monotonic() - started + wait > retrySeconds) {
      throw new SignalNotDelivered(`signal '${name}' to run ${runId} not taken in ${retrySeconds} s; last: ${last}`);
    }
    await sleep(wait);
    backoff = Math.min(MAX_BACKOFF_SECONDS, backoff * 2);
  }
}
