// What a handler answers, built and checked here so the engine never refuses it.
// Invariant: an answer leaves this kit only in a shape the engine records whole (docs/contract.md, "The resource
// ledger"): done() or refused(reason), with the resources the action created and how each is reverted. checked()
// is the one test of that (the type, the outcome, the resources, a JSON object of at most 1 MB): done() and
// refused() pass what they build through it, and the bridge passes every handler's answer through it before the
// key records it. What fails throws BadAnswer. The limits are the engine's (chalicelib/events/ledger.py; the
// project's tests hold them equal).
export const MAX_RESOURCES = 100;
export const KIND_CHARS = 40;
export const ID_CHARS = 191;
export const MAX_REVERT_PARAMS_BYTES = 16 * 1024;
export const MAX_JSON_DEPTH = 30;
export const MAX_ANSWER_BYTES = 1024 * 1024;
export const BY_HAND = 'core.cue';
const MODULE_ACTION = /^[a-z][a-z0-9_]{0,48}\.[a-z][a-z0-9_]{0,48}$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export class BadAnswer extends Error {}

export class Answer {
  constructor(body, status = 200) {
    this.body = body;
    this.status = status;
  }

  payload() {
    let data;
    try {
      data = Buffer.from(JSON.stringify(this.body));
    } catch (why) { // a BigInt, a cycle
      throw new BadAnswer(`the answer is not JSON: ${why.message}`);
    }
    if (data.length > MAX_ANSWER_BYTES) {
      throw new BadAnswer(`the answer is ${data.length} bytes; the engine reads at most ${MAX_ANSWER_BYTES}`);
    }
    return data;
  }

  // The action took effect: a 2xx that is not a refusal, or an answer the kit refused after the handler ran
  // ("applied": true, in the body so that a store keeping the body keeps it too).
  get applied() {
    return this.body.applied === true || (this.status >= 200 && this.status < 300 && this.body.outcome !== 'refused');
  }
}

export function resource(kind, id, revert) {
  return revert === undefined ? { kind, id } : { kind, id, revert };
}

export function revert(action, params = {}) {
  return { action, params };
}

// resources: one resource(...) or an array of them
export function done(resources = [], extra = {}) {
  return checked(new Answer(withResources({ outcome: 'done', ...extra }, resources)));
}

export function refused(reason, resources = []) {
  return checked(new Answer(withResources({ outcome: 'refused', reason }, resources)));
}

function withResources(body, resources) {
  const list = isObject(resources) ? [resources] : resources;
  if (!Array.isArray(list)) throw new BadAnswer('resources: one resource(...) or an array of them');
  return list.length ? { ...body, resources: list } : body;
}

// `answer` when the engine takes it whole and the kit can send it, else BadAnswer saying what is wrong.
export function checked(answer) {
  if (!(answer instanceof Answer)) {
    const kind = isObject(answer) ? 'a plain object' : Array.isArray(answer) ? 'an array' : String(answer);
    throw new BadAnswer(`a handler returns done(...) or refused(...), not ${kind}`);
  }
  const problem = answerProblem(answer);
  if (problem) throw new BadAnswer(problem);
  answer.payload(); // JSON, and at most MAX_ANSWER_BYTES
  return answer;
}

function answerProblem({ body, status }) {
  if (!isObject(body)) return "the answer's body: a JSON object";
  if (!Number.isInteger(status) || status < 200 || status > 599) return "the answer's status: an HTTP status from 200 to 599";
  const outcome = 'outcome' in body ? body.outcome : 'done'; // as the engine reads it: a null outcome is no outcome it knows
  if (status < 300 && outcome !== 'done' && outcome !== 'refused') {
    return `outcome: done or refused, not '${String(outcome).slice(0, 40)}'`;
  }
  if (outcome === 'refused' && (typeof body.reason !== 'string' || !body.reason.trim())) return 'a refusal names its reason';
  return 'resources' in body ? resourcesProblem(body.resources) : null;
}

export function resourcesProblem(raw) {
  if (!Array.isArray(raw)) return 'resources: a list';
  if (raw.length > MAX_RESOURCES) return `resources: at most ${MAX_RESOURCES} entries, not ${raw.length}`;
  for (let i = 0; i < raw.length; i++) {
    const problem = entryProblem(raw[i], `resources[${i}]`);
    if (problem) return problem;
  }
  return null;
}

function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function entryProblem(entry, path) {
  if (!isObject(entry) || Object.keys(entry).some((k) => !['kind', 'id', 'revert'].includes(k))) {
    return `${path}: an object with kind, id and revert? only`;
  }
  for (const [name, most] of [['kind', KIND_CHARS], ['id', ID_CHARS]]) {
    const value = entry[name];
    // the engine counts characters as Python does: code points
    if (typeof value !== 'string' || [...value].length < 1 || [...value].length > most || LONE_SURROGATE.test(value)) {
      return `${path}.${name}: a string of 1 to ${most} characters of valid UTF-8`;
    }
  }
  if (!('revert' in entry)) return null;
  const rev = entry.revert;
  if (!isObject(rev) || Object.keys(rev).some((k) => !['action', 'params'].includes(k))) {
    return `${path}.revert: an object with action and params? only`;
  }
  const action = rev.action;
  const params = rev.params === undefined ? {} : rev.params;
  if (typeof action !== 'string' || !(action === BY_HAND || (MODULE_ACTION.test(action) && !action.startsWith('core.')))) {
    return `${path}.revert.action: a module action (module.name) or ${BY_HAND}`;
  }
  if (!isObject(params)) return `${path}.revert.params: an object`;
  if (depth(params) > MAX_JSON_DEPTH) return `${path}.revert.params: nests deeper than ${MAX_JSON_DEPTH} levels`;
  const text = JSON.stringify(params);
  if (pythonJsonLength(params) > MAX_REVERT_PARAMS_BYTES || LONE_SURROGATE.test(text)) {
    return `${path}.revert.params: at most ${MAX_REVERT_PARAMS_BYTES} bytes of valid UTF-8`;
  }
  return null;
}

function depth(value) {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depth));
  if (isObject(value)) return 1 + Math.max(0, ...Object.values(value).map(depth));
  return 0;
}

// The engine measures params as Python's json.dumps writes them: ", " and ": " between items, non-ASCII escaped.
function pythonJsonLength(value) {
  if (Array.isArray(value)) return 2 + value.reduce((n, v, i) => n + pythonJsonLength(v) + (i ? 2 : 0), 0);
  if (isObject(value)) {
    return 2 + Object.entries(value).reduce((n, [k, v], i) => n + pythonJsonLength(k) + 2 + pythonJsonLength(v) + (i ? 2 : 0), 0);
  }
  if (typeof value === 'string') return JSON.stringify(value).replace(/[\u0080-\uffff]/g, '\\uXXXX').length;
  return JSON.stringify(value).length;
}
