// What a handler answers, built and checked here so the engine never refuses it.
// Invariant: an answer leaves this kit only in a shape the engine records whole (docs/contract.md, "The resource
// ledger"): done() or refused(reason), with the resources the action created and how each is reverted. A list
// the engine would refuse throws BadAnswer here, in the game's own logs. The limits are the engine's
// (chalicelib/events/ledger.py; the project's tests hold them equal).
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
    const data = Buffer.from(JSON.stringify(this.body));
    if (data.length > MAX_ANSWER_BYTES) {
      throw new BadAnswer(`the answer is ${data.length} bytes; the engine reads at most ${MAX_ANSWER_BYTES}`);
    }
    return data;
  }

  get applied() {
    return this.status >= 200 && this.status < 300 && this.body.outcome !== 'refused';
  }
}

export function resource(kind, id, revert) {
  return revert === undefined ? { kind, id } : { kind, id, revert };
}

export function revert(action, params = {}) {
  return { action, params };
}

export function done(resources = [], extra = {}) {
  return new Answer(withResources({ outcome: 'done', ...extra }, resources));
}

export function refused(reason, resources = []) {
  if (typeof reason !== 'string' || !reason.trim()) throw new BadAnswer('a refusal names its reason');
  return new Answer(withResources({ outcome: 'refused', reason }, resources));
}

function withResources(body, resources) {
  if (resources.length) {
    const problem = resourcesProblem(resources);
    if (problem) throw new BadAnswer(problem);
    body.resources = resources;
  }
  return body;
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
