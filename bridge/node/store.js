// Where the bridge keeps what it did for each idempotency key: at most once, and the attempt fence.
// Invariant: every decision about a key is one atomic step of the store. begin(key, attempt) decides whether a
// delivery is behind the fence, a repeat of a key already answered (its answer replayed), a key being applied now,
// or new (then marked in progress); status(key, attempt) raises the key's fence to the attempt asked about and
// says what it knows, in the same step. A real store does each in one database transaction and records the answer
// in the same transaction as the game-world change. MemoryStore is for trying the kit: it forgets everything when
// the process stops, so a restarted game would apply a repeated delivery again.
export class MemoryStore {
  constructor() {
    this.keys = new Map();
  }

  row(key) {
    if (!this.keys.has(key)) this.keys.set(key, { fence: 0, inProgress: false, answer: null });
    return this.keys.get(key);
  }

  // -> {decision: 'new' | 'replay' | 'fenced' | 'busy', answer?, fence?}
  async begin(key, attempt) {
    const row = this.row(key);
    if (attempt < row.fence) return { decision: 'fenced', fence: row.fence };
    if (row.answer) return { decision: 'replay', answer: row.answer };
    if (row.inProgress) return { decision: 'busy' };
    row.inProgress = true;
    return { decision: 'new' };
  }

  async finish(key, answer) {
    Object.assign(this.row(key), { inProgress: false, answer });
  }

  async abandon(key) {
    this.row(key).inProgress = false;
  }

  // -> {status: 'applied' | 'not_applied' | 'in_progress', answer?}
  async status(key, attempt) {
    const row = this.row(key);
    row.fence = Math.max(row.fence, attempt);
    if (row.answer && row.answer.applied) return { status: 'applied', answer: row.answer };
    return { status: row.inProgress ? 'in_progress' : 'not_applied' };
  }
}
