// @ts-check
// Keeps a page fresh without keeping a sleeping deployment awake.
//
// `load()` fetches and renders, and says whether anything on the page is
// `live` (can change any second), `idle` (could change, rarely) or `over`
// (cannot change). Live pages are polled every couple of seconds; idle ones
// less and less often, up to every five minutes; finished ones and hidden tabs
// not at all (a tab coming back into view is refreshed at once). A load that
// fails leaves "Last updated" at the last that worked and says so; a page that
// was live (or never loaded) tries again soon, 2 s doubling to 15 s, not at
// the idle pace: the network back, it is live again within seconds.
//
// Nor a page nobody has touched (pointer, keys, tab shown or focused) for 10
// min: it stops, says so at the top of the screen and in the tab's title, and
// updates at the next touch, key or click (a phone looked at and scrolled), on
// its button, or when shown or focused.
// Aurora pauses only after 300 s without a connection, so a forgotten tab
// must not poll (docs/console.md, "Polling"). Every page polls through here.
//
// While the API does not answer (api.js retrying a request), the freshness line says so and when it tries
// again, never "Live: updating every 2 s": what the page shows is as of its last update. While a press waits
// out a 503's Retry-After the line says so, whatever the page's own polls answer meanwhile.

import { get, watchRetries } from './api.js';
import { el, needYou, span, staleTitle } from './ui.js';

export const LIVE_MS = 2000;
export const IDLE_FIRST_MS = 15000;
export const IDLE_MAX_MS = 300000;
export const UNATTENDED_MAX_MS = 600000;
export const UNREAD_MAX_MS = 15000; // a live page whose load failed (unread) tries again at most this long after
// A live page's own polls read the header's count at most this often: it is another request each time, and the
// API bills per request (the person's own action, a tab shown, Update now read it at once).
export const COUNT_MS = 10000;

// `?unattended_after=<seconds>` in the address shortens the bound, never lengthens it.
const asked = Number(new URLSearchParams(location.search).get('unattended_after'));
const UNATTENDED_MS = asked > 0 ? Math.min(asked * 1000, UNATTENDED_MAX_MS) : UNATTENDED_MAX_MS;

// When the page was last touched (performance.now(): no change of the clock moves it).
let touchedAt = performance.now();
const touched = () => { touchedAt = performance.now(); };
// The pollers stopped because nobody used their page: the next touch wakes them.
const asleep = new Set();
for (const kind of ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart']) {
  window.addEventListener(kind, () => {
    touched();
    for (const poller of [...asleep]) poller.wake();
  }, { capture: true, passive: true });
}
const unattendedFor = () => performance.now() - touchedAt;

// The header's "N runs need you", read again (GET /inbox?limit=0: the count alone) with every poll of a page that
// does not read it itself, and on every page opened; a failed read leaves it as it was until the next.
export async function refreshNeedYou() {
  try {
    needYou((await get('/inbox?limit=0')).needs_you);
  } catch {
    /* the page says what went wrong with its own read */
  }
}

export class Poller {
  // `counts`: whether each load also reads the needs-you count (false: the page's own load sets it); `liveAt()`:
  // when an idle page becomes live (a scheduled run nearing its time; null: not known), its idle wait cut to then.
  constructor(load, describe, { counts = true, liveAt = () => null } = {}) {
    this.counts = counts;
    this.liveAt = liveAt;
    this.load = load;
    this.describe = describe;
    this.idleMs = IDLE_FIRST_MS;
    this.timer = null;
    this.dueAt = 0;
    this.loading = null;
    this.again = false;
    this.stopped = false;
    this.state = null;
    this.lastGood = null; // the state the last load that worked said (null: none has yet)
    this.unreadMs = LIVE_MS; // how long a live page whose load failed waits to try again
    this.loadedAt = null; // when the page last had an answer: the last load that worked
    this.retry = null; // the retry pending that the line says (api.js pendingRetry), or null
    this.told = null; // the page's own state, said when no retry is pending: {state, facts}
    this.countedAt = -Infinity; // when this page's loads last read the count
    this.onVisibility = () => this.visibilityChanged();
    this.onFocus = () => this.cameBack();
    // The page's own reads first (the page is not updating), else a press's (the page updates; the press waits).
    this.unwatch = watchRetries((retry, all) => this.retrying(all.find((r) => r.method === 'GET') || retry));
    document.addEventListener('visibilitychange', this.onVisibility);
    window.addEventListener('focus', this.onFocus);
  }

  // Load now (at start, after an action, when the tab is shown, on Update now); a call during a load queues one more.
  // `polled`: the poll's own timer asked, so the count is read only when COUNT_MS have passed since the last read.
  async now({ polled = false } = {}) {
    if (this.stopped) return;
    asleep.delete(this);
    if (this.loading) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = null;
    const counts = this.counts && (!polled || performance.now() - this.countedAt >= COUNT_MS);
    if (counts) this.countedAt = performance.now();
    this.loading = (async () => {
      try {
        const [state] = await Promise.all([this.load(), counts ? refreshNeedYou() : null]);
        this.loadedAt = new Date();
        return state;
      } catch {
        return 'unread'; // the view has said what went wrong; what it shows is as of the last load that worked
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
    if (state !== 'unread') this.lastGood = state;
    if (state === 'over') {
      this.tell('over');
      if (this.counts) this.countLater(); // nothing here changes, but the count of what needs the person does
      return;
    }
    if (document.hidden) {
      this.tell('hidden');
      return;
    }
    const live = state === 'live' || (state === 'unread' && this.lastGood !== 'idle');
    const becomesLive = live ? null : this.liveAt();
    const idle = becomesLive === null ? this.idleMs : Math.max(LIVE_MS, Math.min(this.idleMs, becomesLive - Date.now()));
    const delay = state === 'unread' && live ? this.unreadMs : state === 'live' ? LIVE_MS : idle;
    this.idleMs = live ? IDLE_FIRST_MS : Math.min(this.idleMs * 2, IDLE_MAX_MS);
    this.unreadMs = state === 'unread' ? Math.min(this.unreadMs * 2, UNREAD_MAX_MS) : LIVE_MS;
    this.dueAt = performance.now() + delay;
    this.tell(state, { delay });
    this.wait();
  }

  // A page that is over still reads the needs-you count, as an idle page polls: less and less often, never
  // while hidden or unattended (the tab coming back reads it at once).
  countLater() {
    if (this.stopped || document.hidden) return;
    const delay = this.idleMs;
    this.idleMs = Math.min(this.idleMs * 2, IDLE_MAX_MS);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (unattendedFor() < UNATTENDED_MS) refreshNeedYou().then(() => this.countLater()); else asleep.add(this);
    }, delay);
  }

  // Until the next load is due or the page becomes unattended, whichever comes first.
  wait() {
    const untilDue = this.dueAt - performance.now();
    const untilUnattended = UNATTENDED_MS - unattendedFor();
    this.timer = setTimeout(() => this.due(), Math.max(0, Math.min(untilDue, untilUnattended)));
  }

  due() {
    this.timer = null;
    if (unattendedFor() >= UNATTENDED_MS) {
      asleep.add(this);
      this.tell('unattended', { delay: UNATTENDED_MS, update: () => this.updateNow() });
    } else if (performance.now() >= this.dueAt) {
      this.now({ polled: true });
    } else {
      this.wait(); // touched meanwhile: the load stays due when it was
    }
  }

  // describe(state, {delay: ms to the next load (unattended: the bound), loadedAt, update: loads now}); while a
  // request waits to be tried again, the line says that instead (`retrying`), until no request waits.
  tell(state, facts = {}) {
    this.told = { state, facts };
    this.show();
  }

  show() {
    const { retry, told } = this;
    if (retry) {
      this.describe('retrying', {
        loadedAt: this.loadedAt, delay: Math.max(0, retry.at - Date.now()), attempt: retry.attempt,
        press: retry.method !== 'GET', label: retry.label, answered: retry.answered,
      });
    } else if (told) {
      this.describe(told.state, { loadedAt: this.loadedAt, ...told.facts });
    }
  }

  // A request of this page (or a press) gets no answer and is tried again: the line says so until no request
  // waits to be tried again (api.js keeps them per request: a poll's answer does not end a press's wait).
  retrying(retry) {
    if (this.stopped) return;
    this.retry = retry;
    this.show();
  }

  // Update now: fresh, and the bound starts again.
  updateNow() {
    touched();
    this.idleMs = IDLE_FIRST_MS;
    this.now();
  }

  // Stopped while hidden or unattended.
  resting() {
    return !this.stopped && this.state !== 'over' && !this.timer && !this.loading;
  }

  visibilityChanged() {
    if (this.stopped) return;
    if (this.state === 'over' && !this.counts) return;
    if (document.hidden) {
      clearTimeout(this.timer);
      this.timer = null;
      if (this.state !== 'over') this.tell('hidden');
    } else {
      this.cameBack();
    }
  }

  // A touch, a key or a click on a page that stopped for want of one: someone is using it again.
  wake() {
    asleep.delete(this);
    this.cameBack();
  }

  // The tab shown or the window focused: someone is looking.
  cameBack() {
    touched();
    if (this.resting() && !document.hidden) this.updateNow();
    if (this.state === 'over' && this.counts && !this.stopped && !this.timer && !document.hidden) {
      this.idleMs = IDLE_FIRST_MS;
      refreshNeedYou().then(() => { if (!this.timer) this.countLater(); });
    }
  }

  stop() {
    this.stopped = true;
    asleep.delete(this);
    staleTitle(false);
    this.unwatch();
    clearTimeout(this.timer);
    document.removeEventListener('visibilitychange', this.onVisibility);
    window.removeEventListener('focus', this.onFocus);
  }
}

// How fresh a page is and why it is (not) updating: a line (not announced: it changes every poll) and, in a
// status region, the unattended banner with its button (pinned to the top of the screen, console.css: on a phone
// the line is below the first screen) and "Not updating · " in front of the tab's title.
export function freshness(node) {
  const line = el('p', { class: 'freshness muted', id: 'freshness-line' });
  const status = el('div', { role: 'status', id: 'freshness-status' });
  node.replaceChildren(line, status);
  return (state, { delay = 0, loadedAt = null, update = null, attempt = 0, press = false, label = null, answered = true }) => {
    const seconds = Math.round(delay / 1000);
    const text = {
      retrying: press
        ? `Your ${label || 'press'} ${answered ? 'is not sent yet: the server does not take it now' : 'got no answer'};`
          + ` trying again in ${seconds} s (attempt ${attempt + 1}).`
        : `Not updating: the server does not answer; trying again in ${seconds} s (attempt ${attempt}).`,
      live: `Live: updating every ${seconds} s.`,
      idle: `Nothing live here: next check in ${seconds} s.`,
      unread: `Not updating: the last read failed; trying again in ${seconds} s.`,
      hidden: 'Not updating while this tab is hidden.',
      over: 'This run is over: nothing more will change.',
      unattended: 'Not updating.',
    }[state];
    line.textContent = loadedAt ? `${text} Last updated ${loadedAt.toLocaleTimeString()}.` : text;
    staleTitle(state === 'unattended');
    if (state !== node.dataset.state) {
      status.replaceChildren(state !== 'unattended' ? '' : el('div', { class: 'banner banner-info', id: 'unattended-banner' },
        el('p', {}, el('strong', {}, `Not updating: nobody has used this page for ${span(delay)}`),
          ', so it stopped asking the server (an open page must not keep the database awake).'),
        el('div', { class: 'buttons' }, el('button', { type: 'button', id: 'update-now', onclick: update }, 'Update now'))));
    }
    node.dataset.state = state;
  };
}
