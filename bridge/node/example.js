// A working bridge in twenty lines: `EVENT_BRIDGE_KEY=... PORT=8081 node example.js`.
// world.spawn makes an npc and says how to revert it; world.despawn is idempotent ("already gone" is done); the
// demo event's other actions (make dev) are done at once.
import { createServer } from 'node:http';
import { Bridge, Gone, clientError, done, handler, resource, revert } from './index.js';

if (!process.env.EVENT_BRIDGE_KEY) throw new Error('EVENT_BRIDGE_KEY must hold the bridge key');
const npcs = new Set();
const bridge = new Bridge({ key: process.env.EVENT_BRIDGE_KEY })
  .action('world.spawn', (d) => {
    const id = `${d.params.npc ?? 'npc'}-${d.key}`;
    npcs.add(id);
    return done([resource('npc', id, revert('world.despawn', { id }))]);
  })
  .action('world.despawn', (d) => {
    if (!npcs.delete(d.params.id)) throw new Gone();
    return done();
  })
  .action('world.give_item', () => done())
  .action('world.fireworks', () => done());

// a request not whole 15 s after it began is closed (Node looks every 30 s; its default waits 300 s): a drip holds little
const server = createServer({ requestTimeout: 15_000, headersTimeout: 15_000 }, handler(bridge))
  .on('clientError', clientError).listen(Number(process.env.PORT ?? 8081), '127.0.0.1', () => {
  console.log(`event bridge on http://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
