// The game side of the bridge, HTTP-neutral: a request in, an answer out.
// Invariant: a delivery reaches a handler only when its signature verifies, its signed body names the action, key
// and attempt the request carries, it is not behind the key's attempt fence, and the key was never answered
// before (a repeat gets the recorded answer again); the status endpoint raises the fence before it answers. So a
// delivery is applied at most once per idempotency key (docs/contract.md, "The game bridge"). Once a handler has
// answered, its key is never applied again: an answer the engine would not take (checked) is recorded as a final
// 422 refusal that the status endpoint reports applied. Only a handler that throws (having changed nothing) or
// answers a failure (429, a 5xx) leaves the key to be tried again. A handler runs only when the store's begin
// decided new. A store that fails before the handler ran is a 503 (nothing applied); one that fails to record the
// handler's answer is a 502, which the engine reads as in doubt (the outcome is unknown). Each handler failure,
// each refused answer and each store failure goes to onError (console.error by default), naming the action, key
// and attempt.
import { randomUUID } from 'node:crypto';
import { verify, statusSigned, Unsigned } from './signing.js';
import { Answer, BadAnswer, checked, done, refused, resource, revert } from './answers.js';
import { LEASE_SECONDS, MemoryStore } from './store.js';

export const MAX_SLOW_SECONDS = 30;
// A handler's deadline unless one is given: half the default lease, so that the kit lets a hung handler's key go
// (rolling its context back) well before the lease could let a re-send take the key while the handler still acts.
export const HANDLER_SECONDS = LEASE_SECONDS / 2;
const MAX_PROBLEM_CHARS = 150; // the engine keeps 300 characters of a reason: ours stays whole

// Thrown by a revert handler whose thing is already gone: answered done (a revert is idempotent).
export class Gone extends Error {}

function error(status, reason) {
  return new Answer(status === 409 || status === 422 ? { outcome: 'refused', reason } : { reason }, status);
}

// The key's final answer when the handler ran and answered what the engine would not take: a refusal (the engine
// does not retry a 422) that a person can read and that the status endpoint reports applied.
function unsendable(actionId, problem) {
  const said = problem.length > MAX_PROBLEM_CHARS ? `${problem.slice(0, MAX_PROBLEM_CHARS - 1)}…` : problem;
  return new Answer({
    outcome: 'refused', applied: true,
    reason: `the ${actionId} handler's answer is not one the engine takes (${said}); `
      + 'the action ran once and will not be applied again: fix the handler',
  }, 422);
}

// The handler's answer, checked; a revert's Gone is done.
async function answerOf(handler, delivery) {
  try {
    return checked(await handler(delivery));
  } catch (failure) {
    if (failure instanceof Gone) return done([], { note: 'already gone' });
    throw failure;
  }
}

class Late extends Error {}

// answerOf, within `seconds` when given: else Late (the handler is left to end on its own)
async function answerInTime(handler, delivery, seconds) {
  if (seconds === null || seconds === undefined) return answerOf(handler, delivery);
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Late(`no answer within ${seconds} s`)), seconds * 1000);
  });
  try {
    return await Promise.race([answerOf(handler, delivery), late]);
  } finally {
    clearTimeout(timer);
  }
}

export class Bridge {
  // key: the bridge key, an array of keys any of which verifies (a rotation: the new key and the old one), or a
  // function returning either as it stands now; handlers: {actionId: fn(delivery)};
  // onError(message, error): where a handler's failure and an answer the kit refused are told (your logger);
  // handlerSeconds: a handler not answered within it is answered 500 and its key let go (null: no deadline, refused
  // with a store that says its leaseSeconds), shorter than the store's lease so that a key is never taken again
  // while its first handler may still act
  constructor({
    key, store = new MemoryStore(), handlers = {}, clock = () => Date.now() / 1000, testActions = true, onError = console.error,
    handlerSeconds = HANDLER_SECONDS,
  }) {
    const lease = store.leaseSeconds;
    if (typeof lease === 'number' && (handlerSeconds === null || handlerSeconds === undefined || handlerSeconds >= lease)) {
      throw new Error(`handlerSeconds (${handlerSeconds}) must be shorter than the store's leaseSeconds (${lease}): else a`
        + " handler still running when its key's lease runs out is applied twice, the engine's re-send taking the key as new");
    }
    this.key = key;
    this.handlerSeconds = handlerSeconds;
    this.store = store;
    this.handlers = { ...(testActions ? testHandlers() : {}), ...handlers };
    this.clock = clock;
    this.onError = onError;
  }

  action(actionId, handler) {
    this.handlers[actionId] = handler;
    return this;
  }

  currentKey() {
    return typeof this.key === 'function' ? this.key() : this.key;
  }

  // method, target (path and query), headers (lower-cased names), body (a Buffer) -> Answer
  // Path segments are taken as sent, never percent-decoded (the engine sends action ids and keys that need no
  // encoding, and a signed body names both): a malformed escape from anyone is no failure of the bridge.
  async handle(method, target, headers, body) {
    let url;
    try {
      url = new URL(target, 'http://bridge');
    } catch {
      return error(400, 'the request target is not a path');
    }
    const path = url.pathname.replace(/\/+$/, '').split('/');
    const n = path.length;
    if (method === 'POST' && n >= 3 && path[n - 2] === 'actions') return this.deliver(path[n - 1], headers, body);
    if (method === 'GET' && n >= 5 && path[n - 4] === 'actions' && path[n - 2] === 'status') {
      return this.status(target, path[n - 1], url.searchParams.get('attempt') || '', headers);
    }
    return error(404, `no such endpoint: ${method} ${url.pathname}`);
  }

  async deliver(actionId, headers, body) {
    try {
      verify(this.currentKey(), headers, body, this.clock());
    } catch (why) {
      if (why instanceof Unsigned) return error(401, why.message);
      throw why;
    }
    const delivery = parse(actionId, headers, body);
    if (typeof delivery === 'string') return error(400, delivery);
    const handler = this.handlers[actionId];
    if (!handler) return error(422, `this bridge has no action '${actionId}'`);
    const seen = `event_bridge: ${actionId} key '${delivery.key}' attempt ${delivery.attempt}`;
    let begun;
    try {
      begun = await this.store.begin(delivery.key, delivery.attempt);
    } catch (failure) { // nothing ran: the engine may try again later
      this.onError(`${seen}: the store failed in begin: answered 503, nothing applied`, failure);
      return error(503, `the bridge's store failed before the action ran: ${failure}`.slice(0, 500));
    }
    if (begun.decision === 'fenced') {
      return error(409, `attempt ${delivery.attempt} is behind the fence: a status was answered for attempt ${begun.fence}`);
    }
    if (begun.decision === 'replay' && begun.answer) return begun.answer;
    if (begun.decision === 'busy') return error(429, 'a delivery of this key is being applied now');
    if (begun.decision !== 'new') { // a replay without its answer, or a decision this kit does not know: never run
      const decided = `the bridge's store decided '${String(begun.decision).slice(0, 40)}'${begun.decision === 'replay' ? ' without its answer' : ''}`;
      this.onError(`${seen}: ${decided}: answered 500, the handler not run (fix the store)`, null);
      return error(500, `${decided}: the action was not run`);
    }
    // a store may give a context for new (its open transaction): the handler makes the world change in it, and
    // finish or abandon get it as their last argument, so that the change and its answer commit together
    const { context } = begun;
    delivery.context = context;
    let answer;
    try {
      answer = await answerInTime(handler, delivery, this.handlerSeconds);
    } catch (failure) {
      if (failure instanceof Late) {
        await this.letGo(delivery.key, context, seen);
        this.onError(`${seen}: the handler did not answer within ${this.handlerSeconds} s: answered 500, the engine `
          + 'sends it again (a handler past its deadline must change nothing more)', failure);
        return error(500, `the ${actionId} handler did not answer within ${this.handlerSeconds} s`);
      }
      if (failure instanceof BadAnswer) { // the handler ran: the world may have changed, so it must not run again
        this.onError(`${seen}: the engine would not take the handler's answer (${failure.message}): answered and `
          + 'recorded a final 422, the action is not applied again', failure);
        answer = unsendable(actionId, failure.message);
      } else { // the handler's own failure: it must act on nothing it did not undo
        await this.letGo(delivery.key, context, seen);
        this.onError(`${seen}: the handler failed: answered 500, the engine sends it again`, failure);
        return error(500, `the ${actionId} handler failed: ${failure}`.slice(0, 500));
      }
    }
    if (answer.status >= 300 && answer.status !== 409 && answer.status !== 422) {
      await this.letGo(delivery.key, context, seen); // a failure applied nothing: the engine's retry reaches the handler again
      return answer;
    }
    try {
      await this.store.finish(delivery.key, answer, context); // done or refused: the key's answer for good
    } catch (failure) { // the handler ran and its answer is not recorded: applied or not, nobody knows here
      this.onError(`${seen}: the store failed in finish after the handler answered: the outcome is unknown; answered `
        + '502 (in doubt: the engine asks the status endpoint or a person)', failure);
      return new Answer({
        reason: `the bridge's store failed to record the ${actionId} answer: the outcome is unknown: ${failure}`.slice(0, 500),
      }, 502);
    }
    return answer;
  }

  // abandon the key; a store that fails leaves it in progress until its lease runs out (nothing applied)
  async letGo(key, context, seen) {
    try {
      await this.store.abandon(key, context);
    } catch (failure) {
      this.onError(`${seen}: the store failed in abandon: the key stays in progress until its lease runs out`, failure);
    }
  }

  async status(target, key, attempt, headers) {
    try {
      verify(this.currentKey(), headers, statusSigned(target), this.clock());
    } catch (why) {
      if (why instanceof Unsigned) return error(401, why.message);
      throw why;
    }
    if (!/^\d+$/.test(attempt)) return error(400, 'the status request names its attempt: ?attempt=<n>');
    let known;
    try {
      known = await this.store.status(key, Number(attempt));
    } catch (failure) {
      this.onError(`event_bridge: status of key '${key}' attempt ${attempt}: the store failed: answered 503`, failure);
      return error(503, `the bridge's store failed: ${failure}`.slice(0, 500));
    }
    const answer = { status: known.status };
    const recorded = known.answer ? known.answer.body : {};
    if (recorded.resources) answer.resources = recorded.resources;
    // applied, and refused (an answer the kit would not send): the engine keeps the step refused, not done
    if (recorded.outcome === 'refused') Object.assign(answer, { outcome: 'refused', reason: recorded.reason ?? '' });
    return new Answer(answer);
  }
}

function parse(actionId, headers, body) {
  let data;
  try {
    data = JSON.parse(body.toString('utf8'));
  } catch {
    return 'the body is not JSON';
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'the body is not a JSON object';
  const key = headers['idempotency-key'] || '';
  const checks = [
    [data.action === actionId, `the signed body names action '${data.action}', the path '${actionId}'`],
    [key !== '' && data.idempotency_key === key, "the signed body's idempotency_key is not the Idempotency-Key header"],
    [Number.isInteger(data.attempt) && data.attempt >= 1, "the signed body's attempt is not a number from 1"],
    [Number.isInteger(data.run_id) && Number.isInteger(data.step_id), 'the signed body names no run_id and step_id'],
    [data.params === undefined || (typeof data.params === 'object' && data.params !== null && !Array.isArray(data.params)),
      "the signed body's params are not an object"],
  ];
  for (const [ok, why] of checks) if (!ok) return why;
  return {
    action: actionId, key, attempt: data.attempt, runId: data.run_id, stepId: data.step_id,
    params: data.params || {}, rehearsal: data.rehearsal === true, body: data,
  };
}

const markers = new Set(); // what test.spawn made and test.despawn has not removed

function testHandlers() {
  return {
    // a receipt of its own on each application: a bridge that applies a repeat again answers differently
    'test.noop': () => done([], { receipt: randomUUID() }),
    'test.slow': async (d) => {
      const seconds = d.params.seconds ?? 3;
      if (typeof seconds !== 'number' || seconds < 0 || seconds > MAX_SLOW_SECONDS) {
        return refused(`test.slow takes seconds from 0 to ${MAX_SLOW_SECONDS}`);
      }
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      return done([], { receipt: randomUUID() });
    },
    'test.spawn': (d) => {
      markers.add(d.key);
      return done([resource('test_marker', d.key, revert('test.despawn', { id: d.key }))]);
    },
    'test.despawn': (d) => {
      if (!markers.delete(d.params.id)) throw new Gone();
      return done();
    },
  };
}
