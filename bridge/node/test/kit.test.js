// The Node bridge kit on its own: signatures, at most once, the fence, answers' shapes, signals' retries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createHmac } from 'node:crypto';
import {
  Bridge, BadAnswer, Gone, done, refused, resource, revert, sendSignal, signedHeaders, statusSigned,
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

function counting() {
  const applied = [];
  const bridge = new Bridge({ key: KEY, clock: () => NOW }).action('world.spawn', (d) => {
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
  ]) {
    assert.throws(() => done([bad]), (e) => e instanceof BadAnswer && e.message.startsWith(where), where);
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
      const [code, answer] = answers.shift();
      res.writeHead(code, { 'Content-Type': 'application/json' });
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
