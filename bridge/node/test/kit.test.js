// The Node bridge kit on its own: signatures, at most once, the fence, answers' shapes, signals' retries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { createHmac } from 'node:crypto';
import {
  Answer, Bridge, BadAnswer, Gone, MemoryStore, clientError, done, handler, refused, resource, revert, sendSignal, signedHeaders, statusSigned,
  SignalRefused, SignalNotDelivered,
} from '../index.js';

const KEY = 'kit-key';
const NOW = 1_800_000_000;

function delivery({ action = 'world.spawn', key = 'k1', attempt = 1 } = {}) {
  const body = Buffer.from(JSON.stringify({
    run_id: 7, step_id: 21, phase: 1, action, version: 1, params: {}, idempotency_key: key, attempt,
  }));
  return [{ ...signedHeaders(KEY, body, NOW), 'idempotency-key': key }, body];
}

function counting(store = new MemoryStore()) {
  const applied = [];
  const bridge = new Bridge({ key: KEY, clock: () => NOW, store }).action('world.spawn', (d) => {
    applied.push(d.key);
    return done([resource('npc', `dragon-${applied.length}`, revert('world.despawn', { id: applied.length }))]);
  });
  return { bridge, applied };
}

function status(bridge, key, attempt) {
  const target = `/actions/world.spawn/status/${key}?attempt=${attempt}`;
  return bridge.handle('GET', target, signedHeaders(KEY, statusSigned(target), NOW), Buffer.alloc(0));
}

test('a delivery is applied once and its answer replayed', async () => {
  const { bridge, applied } = counting();
  const first = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  const again = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  assert.deepEqual(applied, ['k1']);
  assert.deepEqual(first.body, again.body);
  assert.deepEqual((await status(bridge, 'k1', 2)).body, { status: 'applied', resources: first.body.resources });
});

test('a request that does not verify is 401 and applies nothing', async () => {
  const { bridge, applied } = counting();
  for (const tamper of ['signature', 'timestamp', 'stale']) {
    const [headers, body] = delivery();
    if (tamper === 'signature') headers['x-event-signature'] = 'sha256=' + '0'.repeat(64);
    if (tamper === 'timestamp') headers['x-event-timestamp'] = String(NOW + 1);
    if (tamper === 'stale') Object.assign(headers, signedHeaders(KEY, body, NOW - 301));
    assert.equal((await bridge.handle('POST', '/actions/world.spawn', headers, body)).status, 401, tamper);
  }
  assert.deepEqual(applied, []);
});

test('during a rotation a bridge takes requests signed with either key and no other', async () => {
  for (const keys of [['new-key', KEY], () => ['new-key', KEY]]) {
    const bridge = new Bridge({ key: keys, clock: () => NOW });
    for (const key of ['new-key', KEY]) {
      const body = Buffer.from(JSON.stringify({ run_id: 7, step_id: 21, action: 'test.noop', idempotency_key: key, attempt: 1 }));
      const answer = await bridge.handle('POST', '/actions/test.noop', { ...signedHeaders(key, body, NOW), 'idempotency-key': key }, body);
      assert.equal(answer.status, 200, key);
      const target = `/actions/test.noop/status/${key}?attempt=2`;
      assert.deepEqual((await bridge.handle('GET', target, signedHeaders(key, statusSigned(target), NOW), Buffer.alloc(0))).body,
        { status: 'applied' });
    }
    const body = Buffer.from(JSON.stringify({ run_id: 7, step_id: 21, action: 'test.noop', idempotency_key: 'k9', attempt: 1 }));
    const other = await bridge.handle('POST', '/actions/test.noop', { ...signedHeaders('another', body, NOW), 'idempotency-key': 'k9' }, body);
    assert.equal(other.status, 401);
    assert.equal(other.body.reason, "the signature does not verify with this bridge's keys");
  }
  const body = Buffer.from('{}');
  const none = await new Bridge({ key: [], clock: () => NOW }).handle('POST', '/actions/test.noop', signedHeaders('', body, NOW), body);
  assert.equal(none.status, 401);
});

test('the status endpoint raises the fence and a lower attempt is refused', async () => {
  const { bridge, applied } = counting();
  assert.deepEqual((await status(bridge, 'k1', 3)).body, { status: 'not_applied' });
  const fenced = await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }));
  assert.equal(fenced.status, 409);
  assert.equal(fenced.body.outcome, 'refused');
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 3 }))).status, 200);
  assert.deepEqual(applied, ['k1']);
});

test('a refusal is replayed and reported not applied', async () => {
  const bridge = new Bridge({ key: KEY, clock: () => NOW }).action('world.spawn', () => refused('the arena is full'));
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery())).body.reason, 'the arena is full');
  assert.deepEqual((await status(bridge, 'k1', 2)).body, { status: 'not_applied' });
});

test('a key left in progress by a crash is taken again once its lease runs out', async () => {
  // the game died mid-delivery: its store kept the key in progress (begin ran, finish never did)
  let now = 100;
  const store = new MemoryStore({ leaseSeconds: 60, clock: () => now });
  assert.equal((await store.begin('k1', 1)).decision, 'new');
  const { bridge, applied } = counting(store);
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }))).status, 429);
  assert.deepEqual((await status(bridge, 'k1', 2)).body, { status: 'in_progress' });
  now += 60;
  assert.deepEqual((await status(bridge, 'k1', 3)).body, { status: 'not_applied' });
  const answer = await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 3 }));
  assert.equal(answer.status, 200);
  assert.deepEqual(applied, ['k1']);
  now += 600; // an answered key stays answered, whatever the time
  assert.equal((await status(bridge, 'k1', 3)).body.status, 'applied');
  assert.deepEqual((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 3 }))).body, answer.body);
  assert.deepEqual(applied, ['k1']);
});

test('by default a handler has a deadline shorter than the lease', () => {
  // without one, a handler stalled past its key's lease is still running when the engine's re-send takes the key
  // as new, and both apply (review item 5)
  const bridge = new Bridge({ key: KEY });
  assert.ok(bridge.handlerSeconds !== null && bridge.handlerSeconds < new MemoryStore().leaseSeconds);
});

test('a deadline not shorter than the store\'s lease is refused, saying why', () => {
  for (const handlerSeconds of [null, 2, 30]) {
    assert.throws(() => new Bridge({ key: KEY, store: new MemoryStore({ leaseSeconds: 2 }), handlerSeconds }), {
      message: `handlerSeconds (${handlerSeconds}) must be shorter than the store's leaseSeconds (2): else a handler`
        + " still running when its key's lease runs out is applied twice, the engine's re-send taking the key as new",
    });
  }
  assert.equal(new Bridge({ key: KEY, store: new MemoryStore({ leaseSeconds: 2 }), handlerSeconds: 1 }).handlerSeconds, 1);
});

test('a handler past its deadline is a JSON 500 and its key let go', async () => {
  const calls = [];
  const told = [];
  let release;
  const bridge = new Bridge({
    key: KEY, clock: () => NOW, handlerSeconds: 0.2, onError: (message) => told.push(message),
  }).action('world.spawn', async (d) => {
    calls.push(d.attempt);
    if (calls.length === 1) await new Promise((resolve) => { release = resolve; });
    return done();
  });
  const late = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  release();
  assert.equal(late.status, 500);
  assert.deepEqual(late.body, { reason: 'the world.spawn handler did not answer within 0.2 s' });
  assert.match(told[0], /world\.spawn key 'k1' attempt 1: the handler did not answer within 0\.2 s/);
  assert.deepEqual((await status(bridge, 'k1', 2)).body, { status: 'not_applied' });
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }))).status, 200);
  assert.deepEqual(calls, [1, 2]);
  const broken = new Bridge({ key: KEY, clock: () => NOW, handlerSeconds: 5, onError: () => {} })
    .action('world.spawn', () => { throw new Error('no world'); });
  assert.match((await broken.handle('POST', '/actions/world.spawn', ...delivery())).body.reason, /no world/);
});

// a store whose database is down for the calls named
class FailingStore extends MemoryStore {
  constructor(...failing) {
    super();
    this.failing = new Set(failing);
  }

  maybe(call) {
    if (this.failing.has(call)) throw new Error('database unreachable');
  }

  async begin(key, attempt) { this.maybe('begin'); return super.begin(key, attempt); }

  async finish(key, answer) { this.maybe('finish'); return super.finish(key, answer); }

  async abandon(key) { this.maybe('abandon'); return super.abandon(key); }

  async status(key, attempt) { this.maybe('status'); return super.status(key, attempt); }
}

function toldBridge(store, spawn) {
  const told = [];
  const bridge = new Bridge({ key: KEY, clock: () => NOW, store, onError: (message, failure) => told.push([message, failure]) })
    .action('world.spawn', spawn);
  return { bridge, told };
}

test('a store failing before the handler ran is a JSON 503 and nothing applied', async () => {
  const applied = [];
  const { bridge, told } = toldBridge(new FailingStore('begin', 'status'), (d) => { applied.push(d.key); return done(); });
  const answer = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  assert.equal(answer.status, 503);
  assert.match(answer.body.reason, /database unreachable/);
  const asked = await status(bridge, 'k1', 1);
  assert.equal(asked.status, 503);
  assert.match(asked.body.reason, /database unreachable/);
  assert.deepEqual(applied, []);
  assert.match(told[0][0], /world\.spawn key 'k1' attempt 1: the store failed in begin/);
});

test('a store failing to record the answer is a 502, which the engine reads as in doubt, and told', async () => {
  // a 5xx with a JSON body would tell the engine "not applied"; a 502 is in doubt whatever its body (classify)
  const applied = [];
  const { bridge, told } = toldBridge(new FailingStore('finish'), (d) => { applied.push(d.key); return done(); });
  const answer = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  assert.equal(answer.status, 502);
  assert.match(answer.body.reason, /the outcome is unknown: Error: database unreachable/);
  assert.deepEqual(applied, ['k1']);
  assert.equal(told.length, 1);
  assert.match(told[0][0], /world\.spawn key 'k1' attempt 1: the store failed in finish/);
  assert.match(String(told[0][1]), /database unreachable/);
});

test('a store failing to let a key go still answers the handler failure', async () => {
  const { bridge, told } = toldBridge(new FailingStore('abandon'), () => { throw new Error('no world'); });
  const answer = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  assert.equal(answer.status, 500);
  assert.match(answer.body.reason, /no world/);
  assert.ok(told.some(([message]) => message.includes('the store failed in abandon')));
});

test('the handler runs only when the store decided new', async () => {
  for (const begun of [{ decision: 'replay' }, { decision: 'Fenced' }, { decision: 'replayed' }, {}]) {
    const store = new MemoryStore();
    store.begin = async () => begun;
    const applied = [];
    const { bridge, told } = toldBridge(store, (d) => { applied.push(d.key); return done(); });
    const answer = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
    assert.equal(answer.status, 500, JSON.stringify(begun));
    assert.match(answer.body.reason, /the action was not run/);
    assert.deepEqual(applied, []);
    assert.match(told[0][0], /the bridge's store decided/);
  }
});

test('a malformed percent-escape is a JSON answer from the bridge, never a failure told to onError', async () => {
  const told = [];
  const bridge = new Bridge({ key: KEY, clock: () => NOW, onError: (message) => told.push(message) });
  const noBody = Buffer.alloc(0);
  assert.equal((await bridge.handle('POST', '/actions/test%ZZnoop', {}, noBody)).status, 401);
  assert.equal((await bridge.handle('GET', '/actions/test.noop/status/k%ZZ?attempt=1', {}, noBody)).status, 401);
  const [headers, body] = delivery({ action: 'test.noop' });
  const named = await bridge.handle('POST', '/actions/test%ZZnoop', headers, body);
  assert.equal(named.status, 400);
  assert.match(named.body.reason, /names action 'test.noop', the path 'test%ZZnoop'/);
  const target = '/actions/test.noop/status/k%ZZ?attempt=1';
  const asked = await bridge.handle('GET', target, signedHeaders(KEY, statusSigned(target), NOW), noBody);
  assert.deepEqual(asked.body, { status: 'not_applied' });
  assert.equal((await bridge.handle('GET', 'http://[', {}, noBody)).status, 400);
  assert.deepEqual(told, []);
});

test("a store's context reaches the handler, then finish or abandon", async () => {
  const handed = [];
  const store = new MemoryStore();
  const { begin, finish, abandon } = store;
  store.begin = async (key, attempt) => {
    const begun = await begin.call(store, key, attempt);
    return begun.decision === 'new' ? { ...begun, context: { tx: `${key}/${attempt}` } } : begun;
  };
  store.finish = async (key, answer, context) => { handed.push(['finish', context]); return finish.call(store, key, answer); };
  store.abandon = async (key, context) => { handed.push(['abandon', context]); return abandon.call(store, key); };
  const seen = [];
  const bridge = new Bridge({ key: KEY, clock: () => NOW, store, onError: () => {} }).action('world.spawn', (d) => {
    seen.push(d.context);
    if (d.attempt === 1) throw new Error('restarting');
    return done();
  });
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery())).status, 500);
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }))).status, 200);
  assert.deepEqual(seen, [{ tx: 'k1/1' }, { tx: 'k1/2' }]);
  assert.deepEqual(handed, [['abandon', { tx: 'k1/1' }], ['finish', { tx: 'k1/2' }]]);
});

test('a handler that throws is a JSON 500 and the key can be tried again; a revert already gone is done', async () => {
  let calls = 0;
  const bridge = new Bridge({ key: KEY, clock: () => NOW })
    .action('world.spawn', () => { calls += 1; if (calls === 1) throw new Error('restarting'); return done(); })
    .action('world.despawn', () => { throw new Gone(); });
  const first = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
  assert.equal(first.status, 500);
  assert.match(first.body.reason, /restarting/);
  assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }))).status, 200);
  const gone = await bridge.handle('POST', '/actions/world.despawn', ...delivery({ action: 'world.despawn', key: 'k2' }));
  assert.equal(gone.body.outcome, 'done');
});

test('an answer the engine would refuse is refused here', () => {
  for (const [bad, where] of [
    [resource('', 'x'), 'resources[0].kind'],
    [resource('npc', 'x'.repeat(192)), 'resources[0].id'],
    [resource('npc', '\ud800'), 'resources[0].id'],
    [resource('npc', 'x', revert('despawn')), 'resources[0].revert.action'],
    [resource('npc', 'x', revert('world.despawn', { blob: 'x'.repeat(17000) })), 'resources[0].revert.params'],
    // a lone surrogate in params, as a value or a key, however deep: JSON.stringify escapes it, the engine refuses it
    [resource('npc', 'x', revert('world.despawn', { name: 'a\ud800b' })), 'resources[0].revert.params'],
    [resource('npc', 'x', revert('world.despawn', { at: [{ name: '\udc00' }] })), 'resources[0].revert.params'],
    [resource('npc', 'x', revert('world.despawn', { ['\ud83d']: 1 })), 'resources[0].revert.params'],
    // NaN and the infinities: JSON.stringify would send null, not what the handler meant
    [resource('npc', 'x', revert('world.despawn', { x: NaN })), 'resources[0].revert.params: no NaN'],
    [resource('npc', 'x', revert('world.despawn', { at: [0, -Infinity] })), 'resources[0].revert.params: no NaN'],
    // a by-hand revert is a cue: the engine refuses one without core.cue's params, and the whole list with it
    [resource('npc', 'x', revert('core.cue')), 'resources[0].revert.params.instruction'],
    [resource('npc', 'x', revert('core.cue', { instruction: ' \n' })), 'resources[0].revert.params.instruction'],
    [resource('npc', 'x', revert('core.cue', { instruction: '\x1c' })), 'resources[0].revert.params.instruction'], // blank to Python
    [resource('npc', 'x', revert('core.cue', { instruction: 'x'.repeat(2001) })), 'resources[0].revert.params.instruction'],
    [resource('npc', 'x', revert('core.cue', { instruction: 'despawn it', note: 'x' })), 'resources[0].revert.params.note'],
    [resource('npc', 'x', revert('core.cue', { instruction: 'despawn it', timeout_seconds: 2 })), 'resources[0].revert.params.timeout_seconds'],
    [resource('npc', 'x', revert('core.cue', { instruction: 'despawn it', timeout_seconds: 6.5 })), 'resources[0].revert.params.timeout_seconds'],
    [resource('npc', 'x', revert('core.cue', { instruction: 'despawn it', on_timeout: 'pause' })), 'resources[0].revert.params: on_timeout needs'],
    [resource('npc', 'x', revert('core.cue', { instruction: 'despawn it', timeout_seconds: 60, remind_after_seconds: 60 })),
      'resources[0].revert.params.remind_after_seconds'],
  ]) {
    assert.throws(() => done([bad]), (e) => e instanceof BadAnswer && e.message.startsWith(where), where);
  }
  for (const params of [
    { instruction: 'despawn the boss by hand', left: undefined }, // JSON.stringify leaves an undefined field out
    { instruction: 'despawn the boss by hand', remind_after_seconds: 60, remind_limit: 3, escalate_after_seconds: 300, timeout_seconds: 600, on_timeout: 'pause' },
    { instruction: 'was the boss despawned?', choices: [{ value: 'yes', label: 'Yes' }, { value: 'no', label: 'No' }], timeout_seconds: 600,
      on_timeout: 'confirm', timeout_choice: 'no' },
  ]) {
    assert.doesNotThrow(() => done([resource('npc', 'x', revert('core.cue', params))]).payload(), params.instruction);
  }
  done(Array.from({ length: 100 }, (_, i) => resource('npc', String(i))));
  assert.throws(() => done(Array.from({ length: 101 }, (_, i) => resource('npc', String(i)))), /at most 100 entries, not 101/);
});

function engine(answers) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      const [code, answer, headers = {}] = answers.shift();
      res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(answer));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, seen, url: `http://127.0.0.1:${server.address().port}/api` })));
}

test('a signal is retried through a resume and signed without the stage', async () => {
  const { server, seen, url } = await engine([[503, { error: 'resuming' }], [429, { error: 'slow down' }], [201, { signal: { name: 'boss_defeated' } }]]);
  const waits = [];
  try {
    const answer = await sendSignal(url, 'sig-key', 42, 'boss_defeated', { boss: 'scarecrow' }, { sleep: async (s) => { waits.push(s); } });
    assert.deepEqual(answer, { signal: { name: 'boss_defeated' } });
  } finally {
    server.close();
  }
  assert.deepEqual(waits, [1, 2]);
  const last = seen.at(-1);
  assert.equal(last.path, '/api/runs/42/signals/boss_defeated');
  const ts = last.headers['x-signal-timestamp'];
  const expected = createHmac('sha256', 'sig-key').update(`${ts}.POST./runs/42/signals/boss_defeated.`).update(last.body).digest('hex');
  assert.equal(last.headers['x-signal-signature'], `sha256=${expected}`);
});

test('a refused signal is final; one never taken gives up after at least a minute', async () => {
  const refusing = await engine([[404, { error: "run 42 has no signal 'boss_dead'" }]]);
  try {
    await assert.rejects(sendSignal(refusing.url, 'k', 42, 'boss_dead', {}, { sleep: async () => {} }),
      (e) => e instanceof SignalRefused && e.message.includes("run 42 has no signal 'boss_dead'"));
  } finally {
    refusing.server.close();
  }
  const down = await engine(Array.from({ length: 50 }, () => [503, { error: 'down' }]));
  let clock = 0;
  try {
    await assert.rejects(sendSignal(down.url, 'k', 42, 'boss_defeated', {}, { sleep: async (s) => { clock += s; }, monotonic: () => clock }),
      (e) => e instanceof SignalNotDelivered && /not taken in 90 s; last: HTTP 503: down/.test(e.message));
  } finally {
    down.server.close();
  }
  assert.ok(clock >= 60);
});

function spawnAnswering(wrong) {
  const spawned = [];
  const logged = [];
  const bridge = new Bridge({ key: KEY, clock: () => NOW, onError: (message) => logged.push(message) })
    .action('world.spawn', (d) => { spawned.push(d.attempt); return wrong(); });
  return { bridge, spawned, logged };
}

test('an answer refused after the handler ran is final, reported applied, logged, and never runs the action again', async () => {
  for (const [wrong, problem] of [
    [() => done([resource('npc', 'x'.repeat(205), revert('world.despawn', { id: 'x' }))]), 'resources[0].id'], // in done()
    [() => ({ outcome: 'done' }), 'not a plain object'],
    [() => done([], { log: 'x'.repeat(1024 * 1024) }), 'the engine reads at most 1048576'],
    [() => done([], { count: 1n }), 'the answer is not JSON'],
    [() => new Answer({ outcome: 'accepted' }, 202), "outcome: done or refused, not 'accepted'"],
  ]) {
    const { bridge, spawned, logged } = spawnAnswering(wrong);
    const first = await bridge.handle('POST', '/actions/world.spawn', ...delivery());
    // 422 is a refusal the engine does not retry; a 500 would be "not applied, try later" and spawn again
    assert.equal(first.status, 422, problem);
    assert.equal(first.body.outcome, 'refused');
    assert.ok(first.body.reason.startsWith("the world.spawn handler's answer is not one the engine takes ("), first.body.reason);
    assert.ok(first.body.reason.includes(problem), first.body.reason);
    assert.ok(first.body.reason.endsWith('the action ran once and will not be applied again: fix the handler'));
    assert.ok(first.payload().length < 1000); // what the key recorded is an answer the kit can send
    const again = await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }));
    assert.deepEqual([again.status, again.body], [422, first.body]);
    // applied (the handler ran), and refused: a lost answer asked about keeps the step refused, not done
    assert.deepEqual((await status(bridge, 'k1', 3)).body, { status: 'applied', outcome: 'refused', reason: first.body.reason });
    assert.equal((await bridge.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 3 }))).status, 422);
    assert.deepEqual(spawned, [1], problem);
    assert.equal(logged.length, 1);
    assert.ok(logged[0].includes("world.spawn key 'k1' attempt 1") && logged[0].includes(problem), logged[0]);
  }
});

test('a handler failure goes to onError with the action, key and attempt, and to console.error by default', async (t) => {
  const logged = [];
  const failing = new Bridge({ key: KEY, clock: () => NOW, onError: (...said) => logged.push(said) })
    .action('world.spawn', () => { throw new Error('restarting'); });
  assert.equal((await failing.handle('POST', '/actions/world.spawn', ...delivery({ attempt: 2 }))).status, 500);
  assert.equal(logged.length, 1);
  assert.match(logged[0][0], /world\.spawn key 'k1' attempt 2: the handler failed/);
  assert.equal(logged[0][1].message, 'restarting');
  const consoleError = t.mock.method(console, 'error', () => {});
  const byDefault = new Bridge({ key: KEY, clock: () => NOW }).action('world.spawn', () => ({ outcome: 'done' }));
  assert.equal((await byDefault.handle('POST', '/actions/world.spawn', ...delivery())).status, 422);
  assert.equal(consoleError.mock.callCount(), 1);
});

test('done() takes one resource as well as an array, and nothing else', () => {
  const one = resource('npc', 'x', revert('world.despawn', { id: 'x' }));
  assert.deepEqual(done(one).body, { outcome: 'done', resources: [one] });
  assert.deepEqual(done([one]).body, done(one).body);
  assert.deepEqual(refused('full', one).body.resources, [one]);
  assert.throws(() => done('npc-1'), (e) => e instanceof BadAnswer && /one resource\(\.\.\.\) or an array/.test(e.message));
});

// The kit's handler on a loopback port; `before(req)` runs first (an Express mount, a body parser).
async function served(before = () => {}, bridge = new Bridge({ key: KEY, clock: () => NOW })) {
  const kit = handler(bridge);
  const server = createServer((req, res) => { Promise.resolve(before(req)).then(() => kit(req, res)); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

test('mounted under a path prefix (Express app.use), a status request is verified against the path the engine signed', async () => {
  const { server, url } = await served((req) => { req.originalUrl = req.url; req.url = req.url.slice('/bridge'.length); });
  const target = '/bridge/actions/world.spawn/status/k1?attempt=1';
  try {
    const answer = await fetch(url + target, { headers: signedHeaders(KEY, statusSigned(target), NOW) });
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), { status: 'not_applied' });
  } finally {
    server.close();
  }
});

function readAll(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

test('a body a parser already read is answered at once with a 500 naming the fix; a GET still gets its status', async () => {
  for (const [name, before] of [
    ['express.json()', async (req) => { req.body = JSON.parse((await readAll(req)).toString() || '{}'); }],
    ['a stream read to its end', async (req) => { await readAll(req); }],
  ]) {
    const { server, url } = await served(before);
    try {
      const [headers, body] = delivery();
      const answer = await fetch(`${url}/actions/world.spawn`, {
        method: 'POST', body, headers: { ...headers, 'content-type': 'application/json' }, signal: AbortSignal.timeout(3000),
      });
      assert.equal(answer.status, 500, name);
      assert.match((await answer.json()).reason, /mount handler\(bridge\) before any body parser/, name);
    } finally {
      server.close();
    }
  }
  const { server, url } = await served((req) => { req.body = {}; }); // body-parser 1.x on a GET it did not read
  const target = '/actions/world.spawn/status/k1?attempt=1';
  try {
    const answer = await fetch(url + target, { headers: signedHeaders(KEY, statusSigned(target), NOW), signal: AbortSignal.timeout(3000) });
    assert.deepEqual(await answer.json(), { status: 'not_applied' });
  } finally {
    server.close();
  }
});

test('a Content-Length over 1 MB is answered 413 at once, before the body is sent', async () => {
  const { server, url } = await served();
  const { port } = new URL(url);
  try {
    const head = await new Promise((resolve, reject) => {
      const conn = connect(Number(port), '127.0.0.1', () => {
        conn.write(`POST /actions/test.noop HTTP/1.1\r\nHost: bridge\r\nContent-Length: ${1024 * 1024 + 1}\r\n\r\n{}`);
      });
      conn.setTimeout(3000, () => { conn.destroy(); reject(new Error('no answer before the body was sent')); });
      conn.on('data', (chunk) => { resolve(chunk.toString()); conn.destroy(); });
      conn.on('error', reject);
    });
    assert.match(head, /^HTTP\/1\.1 413 /);
  } finally {
    server.close();
  }
});

function rawExchange(port, request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const conn = connect(Number(port), '127.0.0.1', () => conn.write(request));
    conn.setTimeout(3000, () => { conn.destroy(); reject(new Error('no whole answer')); });
    conn.on('data', (chunk) => chunks.push(chunk));
    conn.on('end', () => resolve(Buffer.concat(chunks).toString()));
    conn.on('error', reject);
  });
}

test('a request Node\'s parser refuses is answered in JSON by clientError', async () => {
  const { server, url } = await served();
  server.on('clientError', clientError);
  const { port } = new URL(url);
  try {
    for (const [lengths, status] of [[['12x'], 400], [['-1'], 400], [['5', '6'], 400]]) {
      const head = lengths.map((n) => `Content-Length: ${n}\r\n`).join('');
      const answer = await rawExchange(port, `POST /actions/test.noop HTTP/1.1\r\nHost: bridge\r\n${head}\r\n{}{}{}`);
      const [top, body] = answer.split('\r\n\r\n');
      assert.match(top, new RegExp(`^HTTP/1\\.1 ${status} `), lengths.join());
      assert.match(top, /Content-Type: application\/json/);
      assert.match(JSON.parse(body).reason, /not valid HTTP/);
    }
    const huge = await rawExchange(port, `GET /actions/x HTTP/1.1\r\nHost: bridge\r\nX-Big: ${'a'.repeat(200 * 1024)}\r\n\r\n`);
    assert.match(huge, /^HTTP\/1\.1 431 /);
    assert.deepEqual(JSON.parse(huge.split('\r\n\r\n')[1]), { reason: 'the request headers are too large' });
  } finally {
    server.close();
  }
});

test('a signal is never retried sooner than Retry-After says; one past the retry time gives up at once', async () => {
  const waited = await engine([[503, { errors: ['resuming'] }, { 'Retry-After': '30' }], [201, { signal: {} }]]);
  const waits = [];
  try {
    await sendSignal(waited.url, 'k', 42, 'boss_defeated', {}, { sleep: async (s) => { waits.push(s); } });
  } finally {
    waited.server.close();
  }
  assert.deepEqual(waits, [30]);
  const late = await engine([[503, { errors: ['resuming'] }, { 'Retry-After': '120' }]]);
  try {
    await assert.rejects(sendSignal(late.url, 'k', 42, 'boss_defeated', {}, { sleep: async (s) => { waits.push(s); } }),
      (e) => e instanceof SignalNotDelivered && /last: HTTP 503: resuming/.test(e.message));
  } finally {
    late.server.close();
  }
  assert.deepEqual(waits, [30]);
  assert.equal(late.seen.length, 1);
});

test("a refused signal's error is the engine's own errors text", async () => {
  const refusing = await engine([[409, { errors: ['run 3 is cancelled; a finished run takes no signal'], detail: { run_status: 'cancelled' } }]]);
  try {
    await assert.rejects(sendSignal(refusing.url, 'k', 3, 'boss_defeated', {}, { sleep: async () => {} }),
      (e) => e instanceof SignalRefused && e.status === 409 && e.error === 'run 3 is cancelled; a finished run takes no signal');
  } finally {
    refusing.server.close();
  }
});
