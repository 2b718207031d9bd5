// The one way the console calls the API: the bearer token, the error shape, and what each refusal means.
//
// A 503 (the database waking or unreachable) or a dropped connection is retried
// after the server's Retry-After, and `hooks.retrying` says so on the page (and
// each `watchRetries` listener, the freshness line among them); so is a keyed
// press answered 500, 502 or 504 (a gateway's timeout after the work was done, a
// function that died after its commit: docs/api.md "Retrying"), counted as an
// answer lost, since it may have taken; a
// 401 hands over to sign-in; every other refusal is thrown as an ApiError
// carrying the server's own messages, for the view to explain, and so is an
// answer that is not the API's (a 2xx that is not JSON: a network's sign-in
// page, a proxy), which must not pass for an answer nor vanish unsaid.
//
// Controls that know what the person saw (issue 27): the tags of what the page
// was shown are remembered as the answers pass through here (a run's ETag from
// GET /runs/{id} and each run of GET /runs, each step's `etag`), and a control
// the vocabulary marks `sends_tag` (resume, advance, cleanup, confirm, skip, retry,
// resend: not pause or cancel, which stop a run whatever it did meanwhile) is sent with the
// tag of what it acts on in If-Match. A 412 (it changed since) is an ApiError
// whose message says so and what it is now; the page then re-reads. Every
// control (a run's, a phase's, a step's: `KEYED`) and every bulk press is sent
// with an Idempotency-Key of its own, the same on its automatic re-sends, so a
// re-send after a lost answer gets the first answer, never a 412 against its own
// change nor a second change (a phase's or a cue's extend moves by minutes and a
// postpone is written again: sent twice each would take twice). The views call
// `post(path, body)` as before.
//
// Retries are kept per request: an answer to one (a poll) does not say another (a
// press waiting out a 503's Retry-After) has been answered. `hooks.retrying` and
// the listeners get the retry still pending that matters most (a press before a
// read), or null once none is.

export class ApiError extends Error {
  // `detail`: the fields the API answers beside the messages (a 403's roles_needed, a 409's run_status,
  // a 412's etag and statuses now).
  constructor(status, messages, detail = {}) {
    super(messages.join(' '));
    this.status = status;
    this.messages = messages;
    this.detail = detail;
    this.lost = false; // a sending of the same press before this answer got none: it may have taken (press.js)
  }

  // A 412: what the person saw has changed, and the messages say what it is now.
  get stale() {
    return this.status === 412;
  }
}

// Any error a view catches as an ApiError: one that is not (a fault of the page itself) keeps its words, status 0.
export const asApiError = (error) => (error instanceof ApiError ? error : new ApiError(0, [String(error?.message || error)]));

export const STALE_WORDS = 'This changed while you were looking: here is what it is now:';

const API_ROOT = new URL('.', location.href); // the console is served at <api>/console
const MAX_ATTEMPTS = 12;
// The answers to a press that do not say whether it took: sent again as the same press, like a lost answer.
const MAY_HAVE_TAKEN = new Set([500, 502, 504]);
const DEFAULT_RETRY_SECONDS = 5;

const hooks = { token: () => null, unauthorized: () => {}, retrying: () => {} };

// The tags of what the page was shown, by run id and step id, and the controls that send one (from the vocabulary).
const shown = { runs: new Map(), steps: new Map(), sendsTag: new Set() };
const RUN_PATH = /^\/?runs\/(\d+)$/;
// A control's path: a run's (/runs/6/pause), a phase's (/runs/6/phases/2/extend) or a step's (/runs/6/steps/42/confirm).
const CONTROL_PATH = /^\/?runs\/(\d+)\/(?:(steps|phases)\/(\d+)\/)?([a-z_-]+)$/; // take-over has a hyphen
// The other presses sent with an Idempotency-Key: the bulk press (POST /runs/bulk; a preview ignores it).
const KEYED_PATHS = [/^\/?runs\/bulk$/];

function remember(method, path, body) {
  if (!body || typeof body !== 'object') return;
  const [route, query = ''] = path.split('?');
  if (method === 'GET' && /^\/?vocabulary$/.test(route) && Array.isArray(body.controls)) {
    shown.sendsTag = new Set(body.controls.filter((control) => control.sends_tag).map((control) => control.name));
  }
  // A later page of a run's steps (steps_cursor) says nothing new of the run: its first page did.
  if (body.run?.etag && (method !== 'GET' || (RUN_PATH.test(route) && !query.includes('steps_cursor')))) {
    shown.runs.set(String(body.run.id), body.run.etag);
  }
  for (const run of Array.isArray(body.runs) ? body.runs : []) if (run.etag) shown.runs.set(String(run.id), run.etag);
  for (const step of [...(Array.isArray(body.steps) ? body.steps : []), body.step]) {
    if (step?.etag) shown.steps.set(String(step.id), step.etag);
  }
}

// A control's POST: its name, and the tag of what it acts on if the page was shown one (null: none).
function controlOf(method, path) {
  const found = method === 'POST' && path.split('?')[0].match(CONTROL_PATH);
  if (!found || found[4] === 'signals') return null;
  const [, runId, on, id, name] = found;
  return { name, tag: on === 'steps' ? shown.steps.get(id) : shown.runs.get(runId) }; // a phase's control acts on its run
}

// Whether a request is sent with an Idempotency-Key (the same on each of its re-sends): every control and bulk press.
export function keyed(method, path) {
  const route = path.split('?')[0];
  return Boolean(controlOf(method, path)) || (method === 'POST' && KEYED_PATHS.some((pattern) => pattern.test(route)));
}

function freshKey() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// What the API says it is now, in the console's words: "run 5 is now paused at phase 1, paused by … : boss bugged"
// (its tag stays in `detail.etag`, not in the words).
function staleError(messages, detail) {
  const now = messages.map((m) => m.replace(/ changed while you were looking: it is now /, ' is now ').replace(/ \(ETag [^)]*\)/, ''));
  return new ApiError(412, [STALE_WORDS, ...now], detail);
}

// Listeners told as `hooks.retrying` is (the pending retry that matters most, or null once none is pending),
// and every pending retry; returns the function that stops telling them.
const retryWatchers = new Set();
export function watchRetries(listener) {
  retryWatchers.add(listener);
  return () => retryWatchers.delete(listener);
}

// The requests waiting to be tried again, each its retry ({seconds, attempt, messages, at, method, path, label, answered:
// false when the last attempt got no answer that says whether it took}).
const pending = new Map();
let requests = 0;

// The pending retry to show: a press's (not a read's), the latest; null when none is pending.
export function pendingRetry() {
  const all = [...pending.values()];
  return all.filter((retry) => retry.method !== 'GET').pop() || all.pop() || null;
}

function retrying(id, retry) {
  if (retry) pending.set(id, retry);
  else if (!pending.delete(id)) return;
  const shown = pendingRetry();
  hooks.retrying(shown);
  for (const listener of retryWatchers) listener(shown, [...pending.values()]);
}

export function configure(given) {
  Object.assign(hooks, given);
}

export function apiUrl(path) {
  return new URL(path.replace(/^\//, ''), API_ROOT);
}

function retryAfter(response) {
  const seconds = Number.parseInt(response?.headers.get('Retry-After') || '', 10);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 120) : DEFAULT_RETRY_SECONDS;
}

async function errorsOf(response) {
  try {
    const body = await response.json();
    const detail = body?.detail && typeof body.detail === 'object' ? body.detail : {};
    if (Array.isArray(body?.errors) && body.errors.length) return { messages: body.errors.map(String), detail };
  } catch { /* not JSON: fall through to the status */ }
  return { messages: [`the server answered ${response.status}`], detail: {} };
}

// A 2xx's body, or an ApiError if it is not the API's JSON (a captive portal answers its sign-in page with 200).
async function apiAnswer(response) {
  const type = (response.headers.get('Content-Type') || '').split(';')[0].trim();
  try {
    if (/json/.test(type)) return await response.json();
  } catch { /* not JSON after all */ }
  throw new ApiError(response.status, [`the answer was not the API's (${type || 'no content type'}, answered ${response.status}):`
    + ' a network sign-in page or a proxy may be in the way'], { notApi: true });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// How a press is sent, fixed once (its key, the tag the person saw), so that it can be sent again as the same press
// later (press.js, after its answer was lost): {idempotencyKey, ifMatch}.
export function pressing(method, path) {
  const control = controlOf(method, path);
  return {
    idempotencyKey: keyed(method, path) ? freshKey() : null,
    ifMatch: control && shown.sendsTag.has(control.name) ? control.tag || null : null,
  };
}

// `options` (all optional): ifMatch, a tag to send instead of the one remembered (null: none);
// idempotencyKey, the key to send instead of a fresh one for this call; attempts, how many times at most it is
// sent (default 12); label, what the person pressed, for the retry's words; outcome, an object the call fills in:
// `unanswered` (how many of its attempts got no answer, or a 5xx that does not say whether it took: the API may have acted on them) and `replayed`
// (the answer is the first answer of an earlier send with this key: Idempotent-Replayed).
export async function call(method, path, body, options = {}) {
  const control = controlOf(method, path);
  const ifMatch = 'ifMatch' in options ? options.ifMatch : control && shown.sendsTag.has(control.name) ? control.tag : null;
  const key = keyed(method, path) ? (options.idempotencyKey || freshKey()) : null; // one per press, the same on each re-send
  const outcome = options.outcome || {};
  outcome.unanswered = 0;
  outcome.replayed = false;
  const id = (requests += 1);
  const most = options.attempts || MAX_ATTEMPTS;
  for (let attempt = 1; ; attempt += 1) {
    const headers = { Accept: 'application/json' };
    const token = hooks.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (ifMatch) headers['If-Match'] = ifMatch;
    if (key) headers['Idempotency-Key'] = key;
    let response = null;
    try {
      response = await fetch(apiUrl(path), {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
      });
    } catch { /* no answer at all: retried like a 503 */ }
    const unknown = !response || (key !== null && MAY_HAVE_TAKEN.has(response.status)); // whether it took is not known
    if (unknown) outcome.unanswered += 1;
    if (response && response.status !== 503 && !unknown) {
      retrying(id, null);
      outcome.replayed = response.headers.get('Idempotent-Replayed') === 'true';
      if (response.ok) {
        if (response.status === 204) return null;
        const answer = await apiAnswer(response);
        remember(method, path, answer);
        return answer;
      }
      const { messages, detail } = await errorsOf(response);
      const error = response.status === 412 ? staleError(messages, detail) : new ApiError(response.status, messages, detail);
      if (response.status === 401) hooks.unauthorized(error);
      throw error;
    }
    const messages = response ? (await errorsOf(response)).messages : ['the API did not answer'];
    if (attempt >= most) {
      retrying(id, null);
      throw new ApiError(503, messages, { unanswered: outcome.unanswered });
    }
    const seconds = retryAfter(response);
    options.onRetry?.({ seconds, attempt, messages, answered: !unknown });
    retrying(id, {
      seconds, attempt, messages, at: Date.now() + seconds * 1000, method, path, label: options.label || null, answered: !unknown,
    });
    await sleep(seconds * 1000);
  }
}

export const get = (path) => call('GET', path);
export const post = (path, body = {}, options = {}) => call('POST', path, body, options);

// A run's detail (GET /runs/{id}), its steps read a page at a time (steps_next_cursor) and each page's step
// controls merged in: every page, or until `enough(steps)` says the pages read so far hold what is needed.
export async function getRun(runId, enough = () => false) {
  const whole = await get(`/runs/${runId}`);
  for (let page = whole; page.steps_next_cursor != null && !enough(whole.steps);) {
    page = await get(`/runs/${runId}?steps_cursor=${page.steps_next_cursor}`);
    whole.steps.push(...page.steps);
    Object.assign(whole.controls.steps, page.controls.steps);
    Object.assign(whole.controls.roles.steps, page.controls.roles.steps);
  }
  return whole;
}
export const put = (path, body) => call('PUT', path, body);

// The tag the page was shown of a run or a step (undefined: none yet), for a view that sends one itself.
export const tagOf = ({ runId, stepId }) => (stepId != null ? shown.steps.get(String(stepId)) : shown.runs.get(String(runId)));

// The roles that would have been allowed, as a 403 answers them beside its message.
export function neededRoles(error) {
  return Array.isArray(error.detail?.roles_needed) ? error.detail.roles_needed.map(String) : [];
}
