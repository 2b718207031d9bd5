// The one way the console calls the API: the bearer token, the error shape, and what each refusal means.
//
// A 503 (the database waking or unreachable) or a dropped connection is retried
// after the server's Retry-After, and `hooks.retrying` says so on the page; a
// 401 hands over to sign-in; every other refusal is thrown as an ApiError
// carrying the server's own messages, for the view to explain.

export class ApiError extends Error {
  // `detail`: the fields the API answers beside the messages (a 403's roles_needed, a 409's run_status).
  constructor(status, messages, detail = {}) {
    super(messages.join(' '));
    this.status = status;
    this.messages = messages;
    this.detail = detail;
  }
}

const API_ROOT = new URL('.', location.href); // the console is served at <api>/console
const MAX_ATTEMPTS = 12;
const DEFAULT_RETRY_SECONDS = 5;

const hooks = { token: () => null, unauthorized: () => {}, retrying: () => {} };

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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function call(method, path, body) {
  for (let attempt = 1; ; attempt += 1) {
    const headers = { Accept: 'application/json' };
    const token = hooks.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let response = null;
    try {
      response = await fetch(apiUrl(path), {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
      });
    } catch { /* no answer at all: retried like a 503 */ }
    if (response && response.status !== 503) {
      hooks.retrying(null);
      if (response.ok) return response.status === 204 ? null : response.json();
      const { messages, detail } = await errorsOf(response);
      const error = new ApiError(response.status, messages, detail);
      if (response.status === 401) hooks.unauthorized(error);
      throw error;
    }
    const messages = response ? (await errorsOf(response)).messages : ['the API did not answer'];
    if (attempt >= MAX_ATTEMPTS) {
      hooks.retrying(null);
      throw new ApiError(503, messages);
    }
    const seconds = retryAfter(response);
    hooks.retrying({ seconds, attempt, messages });
    await sleep(seconds * 1000);
  }
}

export const get = (path) => call('GET', path);
export const post = (path, body = {}) => call('POST', path, body);
export const put = (path, body) => call('PUT', path, body);

// The roles that would have been allowed, as a 403 answers them beside its message.
export function neededRoles(error) {
  return Array.isArray(error.detail?.roles_needed) ? error.detail.roles_needed.map(String) : [];
}
