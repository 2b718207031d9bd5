// The game side of the event run engine's game bridge (docs/game-bridge.md): verify each delivery, apply it at
// most once per idempotency key, keep the attempt fence and serve the status endpoint, answer in shapes the engine
// records, and send the engine signals.
export { Answer, BadAnswer, done, refused, resource, revert, resourcesProblem } from './answers.js';
export { Bridge, Gone } from './bridge.js';
export { clientError, handler, MAX_BODY_BYTES } from './server.js';
export { sendSignal, signalHeaders, SignalRefused, SignalNotDelivered } from './signals.js';
export { LEASE_SECONDS, MemoryStore } from './store.js';
export { signedHeaders, statusSigned, verify, Unsigned, WINDOW_SECONDS } from './signing.js';
