// Where the bridge keeps what it did for each idempotency key: at most once, and the attempt fence.
// Invariant: every decision about a key is one atomic step of the store. begin(key, attempt) decides whether a
// delivery is behind the fence, a repeat of a key already answered (its answer replayed), a key being applied now,
// or new (then marked in progress until a lease runs out); status(key, attempt) raises the key's fence to the
// attempt asked about and says what it knows, in the same step. An in-progress mark whose lease ran out (the game
// crashed or restarted mid-delivery, or its handler hung) is no longer in progress: status says not_applied and
// the next begin takes the key as new. That is sound because the world change commits with finish: a mark that
// expired never applied anything. The lease (LEASE_SECONDS by default) must be longer than any handler runs (the
// Bridge's handlerSeconds deadline makes sure). A real store does each in one database transaction and records the answer
// in the same transaction as the game-world change. MemoryStore is for trying the kit: it forgets everything when
// the process stops, so a restarted game would apply a repeated delivery again.
export const LEASE_SECONDS = 60; // how long a key stays in progress: longer than any handler runs

export class MemoryStore {
  // leaseSeconds: how long a key stays in progress; clock: seconds, for tests
  constructor({ leaseSeconds = LEASE_SECONDS, clock = () => performance.now() / 1000 } = {}) {
    this.keys = new Map();
    this.leaseSeconds = leaseSeconds;
    this.clock = clock;
  }

  row(key) {
    if (!this.keys.has(key)) this.keys.set(key, { fence: 0, inProgressUntil: null, answer: null });
    return this.keys.get(key);
  }

  inProgress(row) {
    return row.inProgressUntil !== null && this.clock() < row.inProgressUntil;
  }

  // -> {decision: 'new' | 'replay' | 'fenced' | 'busy', answer?, fence?}
  async begin(key, attempt) {
    const row = this.row(key);
    if (attempt < row.fence) return { decision: 'fenced', fence: row.fence };
    if (row.answer) return { decision: 'replay', answer: row.answer };
    if (this.inProgress(row)) return { decision: 'busy' };
    // not in progress, or its lease ran out: a mark that expired applied nothing (the change commits with finish)
    row.inProgressUntil = this.clock() + this.leaseSeconds;
    return { decision: 'new' };
  }

  async finish(key, answer) {
    Object.assign(this.row(key), { inProgressUntil: null, answer });
  }

  async abandon(key) {
    this.row(key).inProgressUntil = null;
  }

  // -> {status: 'applied' | 'not_applied' | 'in_progress', answer?}
  async status(key, attempt) {
    const row = this.row(key);
    row.fence = Math.max(row.fence, attempt);
    if (row.answer && row.answer.applied) return { status: 'applied', answer: row.answer };
    return { status: this.inProgress(row) ? 'in_progress' : 'not_applied' };
  }
}
