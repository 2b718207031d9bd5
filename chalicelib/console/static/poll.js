// @ts-check
// Keeps a page fresh without keeping a sleeping deployment awake.
//
// `load()` fetches and renders, and says whether anything on the page is
// `live` (can change any second), `idle` (could change, rarely) or `over`
// (cannot change). Live pages are polled every couple of seconds; idle ones
// less and less often, up to every five minutes; finished ones and hidden tabs
// not at all (a tab coming back into view is refreshed at once).

export const LIVE_MS = 2000;
export const IDLE_FIRST_MS = 15000;
export const IDLE_MAX_MS = 300000;

export class Poller {
  constructor(load, describe) {
    this.load = load;
    this.describe = describe;
    this.idleMs = IDLE_FIRST_MS;
    this.timer = null;
    this.loading = null;
    this.again = false;
    this.stopped = false;
    this.state = null;
    this.onVisibility = () => this.visibilityChanged();
    document.addEventListener('visibilitychange', this.onVisibility);
  }

  // Load now (at start, after an action, when the tab is shown); a call during a load queues one more.
  async now() {
    if (this.stopped) return;
    if (this.loading) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = null;
    this.loading = (async () => {
      try {
        return await this.load();
      } catch {
        return 'idle'; // the view has said what went wrong; try again later, backing off
      }
    })();
    const state = await this.loading;
    this.loading = null;
    if (this.again) {
      this.again = false;
      this.now();
      return;
    }
    this.schedule(state);
  }

  schedule(state) {
    if (this.stopped) return;
    this.state = state;
    if (state === 'over') {
      this.describe('over');
      return;
    }
    if (document.hidden) {
      this.describe('hidden');
      return;
    }
    const delay = state === 'live' ? LIVE_MS : this.idleMs;
    this.idleMs = state === 'live' ? IDLE_FIRST_MS : Math.min(this.idleMs * 2, IDLE_MAX_MS);
    this.describe(state, delay);
    this.timer = setTimeout(() => this.now(), delay);
  }

  visibilityChanged() {
    if (this.stopped || this.state === 'over') return;
    if (document.hidden) {
      clearTimeout(this.timer);
      this.timer = null;
      this.describe('hidden');
    } else if (!this.timer && !this.loading) {
      this.idleMs = IDLE_FIRST_MS;
      this.now();
    }
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    document.removeEventListener('visibilitychange', this.onVisibility);
  }
}

// The line under a page that says how fresh it is and why it is (not) updating.
export function freshness(node) {
  return (state, delay) => {
    const seconds = Math.round((delay || 0) / 1000);
    const text = {
      live: `Live: updating every ${seconds} s.`,
      idle: `Nothing live here: next check in ${seconds} s.`,
      hidden: 'Updates paused while this tab is hidden.',
      over: 'This run is over: nothing more will change.',
    }[state];
    node.textContent = `${text} Last updated ${new Date().toLocaleTimeString()}.`;
    node.dataset.state = state;
  };
}
