// What a handler answers, built and checked here so the engine never refuses it.
// Invariant: an answer leaves this kit only in a shape the engine records whole (docs/contract.md, "The resource
// ledger"): done() or refused(reason), with the resources the action created and how each is reverted. checked()
// is the one test of that (the type, the outcome, the resources, a JSON object of at most 1 MB): done() and
// refused() pass what they build through it, and the bridge passes every handler's answer through it before the
// key records it. What fails throws BadAnswer (among it revert params holding NaN or an infinity, which JSON would
// send as null, and a by-hand revert whose params are not core.cue's). The limits are the engine's
// (chalicelib/events/ledger.py and core.cue's schema in chalicelib/events/actions/registry.py; the project's tests
// hold them equal).
export const MAX_RESOURCES = 100;
export const KIND_CHARS = 40;
export const ID_CHARS = 191;
export const MAX_REVERT_PARAMS_BYTES = 16 * 1024;
export const MAX_JSON_DEPTH = 30;
export const MAX_ANSWER_BYTES = 1024 * 1024;
export const BY_HAND = 'core.cue';
const MODULE_ACTION = /^[a-z][a-z0-9_]{0,48}\.[a-z][a-z0-9_]{0,48}$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// A by-hand revert is a cue the cleanup parks on, so its params are core.cue's: the instruction a person reads, and
// optionally the cue's attention fields and answers, each within the engine's schema and rules. Anything else the
// engine refuses, and with it the whole resource list.
const DAY = 24 * 3600;
const WEEK = 7 * DAY;
export const CUE_TEXT_CHARS = 2000;
export const CUE_WHOLE_NUMBERS = {
  remind_after_seconds: [5, DAY], remind_limit: [1, 20], escalate_after_seconds: [5, WEEK], timeout_seconds: [5, WEEK],
};
export const CUE_ON_TIMEOUT = ['continue', 'pause', 'confirm'];
export const CUE_CHOICES = [2, 10];
export const CHOICE_VALUE_CHARS = 100;
export const CHOICE_LABEL_CHARS = 200;
export const CUE_FIELDS = ['instruction', ...Object.keys(CUE_WHOLE_NUMBERS), 'on_timeout', 'choices', 'timeout_choice'];
// Something besides whitespace as the engine (Python's \S) reads it: its whitespace is not quite JavaScript's \s.
const NOT_PYTHON_SPACE = /[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

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
  // JSON.stringify would send NaN and the infinities as null, a value the handler never meant
  if (!every(params, (v) => typeof v !== 'number' || Number.isFinite(v))) {
    return `${path}.revert.params: no NaN or infinity (JSON has none; it would go as null)`;
  }
  // each string tested as it is: JSON.stringify writes a lone surrogate as an escape, which no test of its text sees
  if (pythonJsonLength(params) > MAX_REVERT_PARAMS_BYTES || !every(params, (v) => typeof v !== 'string' || !LONE_SURROGATE.test(v))) {
    return `${path}.revert.params: at most ${MAX_REVERT_PARAMS_BYTES} bytes of valid UTF-8`;
  }
  return action === BY_HAND ? cueProblem(params, `${path}.revert.params`) : null;
}

// Why the engine would refuse `params` as a by-hand revert's (core.cue's schema, then its rules), or null.
function cueProblem(params, path) {
  const given = (name) => Object.hasOwn(params, name) && isSent(params[name]);
  const unknown = Object.keys(params).filter((k) => given(k) && !CUE_FIELDS.includes(k)).sort();
  if (unknown.length) return `${path}.${unknown[0]}: a by-hand revert (${BY_HAND}) takes only ${CUE_FIELDS.join(', ')}`;
  if (!isText(params.instruction, CUE_TEXT_CHARS)) {
    return `${path}.instruction: what a person is to do by hand, ${CUE_TEXT_CHARS} characters at most, not blank`;
  }
  for (const [name, [least, most]] of Object.entries(CUE_WHOLE_NUMBERS)) {
    const value = params[name];
    if (given(name) && !(Number.isInteger(value) && value >= least && value <= most)) {
      return `${path}.${name}: a whole number from ${least} to ${most}`;
    }
  }
  if (given('on_timeout') && !CUE_ON_TIMEOUT.includes(params.on_timeout)) return `${path}.on_timeout: one of ${CUE_ON_TIMEOUT.join(', ')}`;
  const choices = given('choices') ? params.choices : [];
  if (!Array.isArray(choices) || (given('choices') && (choices.length < CUE_CHOICES[0] || choices.length > CUE_CHOICES[1]))) {
    return `${path}.choices: a list of ${CUE_CHOICES[0]} to ${CUE_CHOICES[1]} answers`;
  }
  for (const [i, choice] of choices.entries()) {
    const fields = isObject(choice) ? Object.keys(choice).filter((k) => isSent(choice[k])).sort().join() : '';
    if (fields !== 'label,value' || !isText(choice.value, CHOICE_VALUE_CHARS) || !isText(choice.label, CHOICE_LABEL_CHARS)) {
      return `${path}.choices[${i}]: {"value", "label"}, texts of at most ${CHOICE_VALUE_CHARS} and ${CHOICE_LABEL_CHARS} characters, not blank`;
    }
  }
  if (given('timeout_choice') && !isText(params.timeout_choice, CHOICE_VALUE_CHARS)) return `${path}.timeout_choice: one of the choices' values`;
  return cueTimersProblem(params, path, given) ?? cueChoicesProblem(params, path, choices, given);
}

// The engine's rule: a reminder or an escalation comes before the timeout, and on_timeout needs one.
function cueTimersProblem(params, path, given) {
  if (!given('timeout_seconds')) return given('on_timeout') ? `${path}: on_timeout needs timeout_seconds` : null;
  for (const name of ['remind_after_seconds', 'escalate_after_seconds']) {
    if (given(name) && params[name] >= params.timeout_seconds) return `${path}.${name}: shorter than timeout_seconds (${params.timeout_seconds})`;
  }
  return null;
}

// The engine's rule: each answer's value is its own; a timeout that confirms a cue with answers names one.
function cueChoicesProblem(params, path, choices, given) {
  const values = choices.map((choice) => choice.value);
  if (new Set(values).size < values.length) return `${path}.choices: each answer's value is its own`;
  const confirms = params.on_timeout === 'confirm';
  if (!given('timeout_choice')) {
    return confirms && values.length ? `${path}: on_timeout confirm of a cue with choices needs timeout_choice` : null;
  }
  if (!confirms || !values.includes(params.timeout_choice)) {
    return `${path}.timeout_choice: one of the choices' values, and only with on_timeout confirm`;
  }
  return null;
}

// Text a person reads, as core.cue's schema has it: 1 to `most` characters (code points, as Python counts), something
// besides whitespace.
function isText(value, most) {
  return typeof value === 'string' && [...value].length >= 1 && [...value].length <= most && NOT_PYTHON_SPACE.test(value);
}

// `test` holds for every key and value in `value`, however deep.
function every(value, test) {
  if (Array.isArray(value)) return value.every((v) => every(v, test));
  if (isObject(value)) return Object.entries(value).every(([k, v]) => test(k) && every(v, test));
  return test(value);
}

// A field JSON.stringify writes: it leaves out one whose value is undefined or a function.
function isSent(value) {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
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
    const sent = Object.entries(value).filter(([, v]) => isSent(v));
    return 2 + sent.reduce((n, [k, v], i) => n + pythonJsonLength(k) + 2 + pythonJsonLength(v) + (i ? 2 : 0), 0);
  }
  if (typeof value === 'string') return JSON.stringify(value).replace(/[\u0080-\uffff]/g, '\\uXXXX').length;
  return (JSON.stringify(value) ?? 'null').length; // undefined in an array is sent as null
}
