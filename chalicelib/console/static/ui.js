// @ts-check
// Small DOM helpers every view shares: elements, times in the viewer's zone, statuses in words and marks, notices.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else if (name === 'class') node.className = value;
    else node.setAttribute(name, value === true ? '' : value);
  }
  node.append(...present(children));
  return node;
}

// The children to show: lists flattened, null, undefined and false left out, anything else as text.
const present = (children) => children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false)
  .map((child) => (child instanceof Node ? child : String(child)));

// A node's children replaced, leaving out what `el` leaves out: the DOM's own replaceChildren would show a null
// as the word "null".
export function fill(node, ...children) {
  node.replaceChildren(...present(children));
}

const LOCAL = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const LOCAL_WITH_ZONE = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });
const HOUR_MINUTE = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const DAY_HOUR_MINUTE = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

function utc(iso) {
  return new Date(iso).toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, '') + ' UTC';
}

// What a hover over any time says: the local time with its zone's name, then UTC.
function hover(iso) {
  return `${LOCAL_WITH_ZONE.format(new Date(iso))} · ${utc(iso)}`;
}

// "12 min" for a span of milliseconds: how long something has waited or lasted.
export function span(ms) {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} days`;
}

// The calendar days from `now`'s day to `at`'s, in the viewer's zone (midnight to midnight: a day of 23 or 25 h too).
const midnight = (date) => new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime();
const calendarDays = (at, now) => Math.round((midnight(at) - midnight(now)) / 86400000);

// "3 minutes ago", "in 2 hours", "tomorrow": a time against now (`now`, ms), in the viewer's language. A day or more
// away counts calendar days in the viewer's zone: Sunday 00:30 seen on Friday afternoon is "in 2 days", not
// "tomorrow", and Saturday evening seen early on Friday is "tomorrow".
export function relativeWords(iso, now = Date.now()) {
  const seconds = (Date.parse(iso) - now) / 1000;
  if (Math.abs(seconds) >= 86400) return RELATIVE.format(calendarDays(new Date(iso), new Date(now)), 'day');
  /** @type {Array<[Intl.RelativeTimeFormatUnit, number]>} */
  const units = [['hour', 3600], ['minute', 60]];
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size) return RELATIVE.format(Math.round(seconds / size), unit);
  }
  return RELATIVE.format(Math.round(seconds / 10) * 10, 'second');
}

// A time as how long ago (or how soon) it is, kept current, then its time of day in the viewer's zone ("in 2 hours
// (20:00)"): the words round a long way (18:29 to 20:00 is "in 2 hours"), and a phone cannot hover nor a keyboard
// focus a title. The local time with its zone, and UTC, on hover.
export function when(iso) {
  if (!iso) return el('span', { class: 'muted' }, '—');
  return el('span', { class: 'when' }, el('time', { datetime: iso, title: hover(iso), 'data-relative': 'ago' }, relativeWords(iso)),
    ' ', el('span', { class: 'muted', 'data-clock': '' }, `(${timeOfDay(iso)})`));
}

// How long since a time ("12 min"), kept current; the time itself on hover.
export function since(iso) {
  return el('time', { datetime: iso, title: hover(iso), 'data-relative': 'since' }, span(Date.now() - Date.parse(iso)));
}

// How long until a time ("4 min"; "0 s" once passed), kept current; the time itself on hover.
export function inFuture(iso) {
  return el('time', { datetime: iso, title: hover(iso), 'data-relative': 'until' }, span(Date.parse(iso) - Date.now()));
}

// A time in full in the viewer's zone (a definition's version, a log row's moment in its details).
export function fullTime(iso) {
  return el('time', { datetime: iso, title: hover(iso) }, LOCAL.format(new Date(iso)));
}

// A time of day in the viewer's zone as words ("20:15"; with its date when not today), for a line of text.
export function timeOfDay(iso) {
  const at = new Date(iso);
  const today = at.toDateString() === new Date().toDateString();
  return (today ? HOUR_MINUTE : DAY_HOUR_MINUTE).format(at);
}

// A time of day in the viewer's zone (`timeOfDay`); its zone and UTC on hover.
export function clock(iso) {
  return el('time', { datetime: iso, title: hover(iso) }, timeOfDay(iso));
}

// Relative times move on their own between the page's refreshes (a refresh re-renders only what changed).
const RELATIVE_TEXT = {
  ago: (iso) => relativeWords(iso),
  since: (iso) => span(Date.now() - Date.parse(iso)),
  until: (iso) => span(Date.parse(iso) - Date.now()),
};
setInterval(() => {
  for (const node of document.querySelectorAll('time[data-relative]')) {
    const text = RELATIVE_TEXT[/** @type {HTMLElement} */ (node).dataset.relative]?.(node.getAttribute('datetime'));
    if (text && node.textContent !== text) node.textContent = text;
  }
}, 5000);

// Every status reads as a word with a mark beside it, so nothing depends on colour. The statuses,
// their words, marks and which are terminal, the declared controls, and every other word of a run
// (a phase's condition, what closed it, what a run waits for, …: each its label and the facts the
// console decides by) come from the API (GET /vocabulary, loaded at sign-in): the console keeps no
// list of its own, and switches on facts, never on a word.
const vocabulary = { marks: new Map(), labels: new Map(), terminalRun: new Set(), terminalStep: new Set(), runStatuses: [], controls: new Map(), words: new Map() };
const WORD_SETS = ['phase_conditions', 'on_timeout', 'closed_by', 'waiting_for', 'signal_effects', 'park_reasons'];
// Not statuses: a parked step (a running one with no lease) and a run's health.
const OTHER_MARKS = new Map([['parked', '!'], ['ok', '✓'], ['degraded', '!']]);

export function useVocabulary(given) {
  for (const word of [...given.run_statuses, ...given.step_statuses]) {
    vocabulary.marks.set(word.status, word.mark);
    vocabulary.labels.set(word.status, word.label);
  }
  vocabulary.runStatuses = given.run_statuses.map((word) => word.status);
  vocabulary.terminalRun = new Set(given.run_statuses.filter((word) => word.terminal).map((word) => word.status));
  vocabulary.terminalStep = new Set(given.step_statuses.filter((word) => word.terminal).map((word) => word.status));
  vocabulary.controls = new Map(given.controls.map((control) => [control.name, control]));
  vocabulary.words = new Map(WORD_SETS.map((set) => [set, given[set] || []]));
}

export const runStatuses = () => vocabulary.runStatuses;
export const isTerminalRun = (status) => vocabulary.terminalRun.has(status);
// Whether a run can change any second (a page showing one polls every 2 s): not finished, and not scheduled more
// than SOON_MS ahead. `liveFrom(run)`: when a scheduled run becomes so (null: not scheduled).
const SOON_MS = 120000;
export const liveFrom = (run) => (run.status === 'scheduled' ? Date.parse(run.scheduled_for) - SOON_MS : null);
export const isLive = (run) => !isTerminalRun(run.status) && (liveFrom(run) ?? -Infinity) <= Date.now();
// A step still open (pending or running: not terminal), as the vocabulary says.
export const isOpenStep = (step) => !vocabulary.terminalStep.has(step.status);
export const labelOf = (status) => vocabulary.labels.get(status) || status;
// A declared control (label, question, note field, …), or undefined for one this console was not told of.
export const controlOf = (name) => vocabulary.controls.get(name);
// Every declared control, in the order the API declares them.
export const declaredControls = () => [...vocabulary.controls.values()];
// One word of a set (`waiting_for`, `closed_by`, …): {value, label, …facts}, or undefined for a word this
// console was not told of (and for none).
export const wordsOf = (set) => vocabulary.words.get(set) || [];
export const wordOf = (set, value) => wordsOf(set).find((word) => word.value === value);
// The word of a set the vocabulary marks as its default (a phase that names no condition, or no on_timeout).
export const defaultWordOf = (set) => wordsOf(set).find((word) => word.default);
// The word of what a run waits for (`waiting.for`): undefined when it waits for nothing.
export const waitOf = (waiting) => (waiting ? wordOf('waiting_for', waiting.for) : undefined);
// Why a parked step waits (its park_reason's word; one parked before reasons were kept waits as the default).
export const parkOf = (step) => wordOf('park_reasons', step.park_reason) || defaultWordOf('park_reasons');
// A label's phrase with its `{fields}` filled in ("ends after {seconds}" → "ends after 20 min").
export const filled = (phrase, fields) => phrase.replace(/\{(\w+)\}/g, (whole, name) => String(fields[name] ?? whole));

export function badge(status, text = vocabulary.labels.get(status) || status) {
  const mark = vocabulary.marks.get(status) || OTHER_MARKS.get(status) || '•';
  return el('span', { class: `badge badge-${status}` }, el('span', { 'aria-hidden': 'true' }, mark), ' ', text);
}

// A dry run says so wherever it is shown (GET /runs/{id}'s run.mode); a live run has no mark.
export function rehearsalMark(run) {
  if (run.mode !== 'rehearsal') return null;
  return el('span', { class: 'badge badge-rehearsal', 'data-rehearsal': run.id }, 'REHEARSAL');
}

// A message in one of the page's live regions; `kind` is info, ok, warning or error.
export function say(regionId, text, kind = 'info', ...extra) {
  const region = document.getElementById(regionId);
  region.replaceChildren();
  if (text) {
    // Focusable (not in the tab order): a press's result takes focus once its page is redrawn (press.js).
    region.append(el('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : null, 'data-kind': kind, tabindex: '-1' },
      el('span', {}, text), ...extra));
  }
}

// A state said in a live region (the connection's), announced only when it changes: `words` (what the state is) are
// said once; `details` (a countdown, an attempt number), shown after them, change in place and are not announced (a
// screen reader would otherwise hear the region again every few seconds of an outage, over a dialog too).
export function sayState(regionId, words, kind = 'info', details = '') {
  const shown = /** @type {HTMLElement | null} */ (document.getElementById(regionId).firstElementChild);
  const detailsNode = shown?.querySelector('[data-details]');
  if (words && detailsNode && shown.dataset.words === words && shown.dataset.kind === kind) {
    if (detailsNode.textContent !== details) detailsNode.textContent = details;
    return;
  }
  say(regionId, words, kind, el('span', { 'data-details': '', 'aria-live': 'off' }, details));
  const fresh = /** @type {HTMLElement | null} */ (document.getElementById(regionId).firstElementChild);
  if (fresh) fresh.dataset.words = words;
}

export function notice(text, kind = 'info', ...extra) {
  say('notice', text, kind, ...extra);
}

// "2 runs need you" in the header and in front of the tab's title, from GET /inbox's `needs_you` (the runs the
// caller can act on); nothing when 0. `pageTitle` sets what follows it; `staleTitle` puts "Not updating" first
// while a page has stopped asking (poll.js).
const titles = { stale: false, count: '', page: 'Event runs' };
const showTitle = () => {
  document.title = [titles.stale ? 'Not updating' : '', titles.count, titles.page].filter(Boolean).join(' · ');
};

export function staleTitle(on) {
  if (titles.stale === on) return;
  titles.stale = on;
  showTitle();
}

export function needYou(count) {
  titles.count = count ? `${count} ${count === 1 ? 'run needs' : 'runs need'} you` : '';
  const badgeNode = document.getElementById('need-you');
  if (badgeNode) {
    badgeNode.textContent = titles.count;
    badgeNode.hidden = !count;
  }
  showTitle();
}

export function pageTitle(text) {
  titles.page = text;
  showTitle();
}

export const capitalised = (text) => (text ? `${text[0].toUpperCase()}${text.slice(1)}` : text);

export function heading(level, text, attrs = {}) {
  return el(`h${level}`, { tabindex: '-1', ...attrs }, text);
}

// Focus lands on `node` after an action, so keyboard and screen-reader users know where they are.
export function focus(node) {
  if (node) node.focus({ preventScroll: false });
}

// Taken before a dialog opens: the function that, later, gives focus back to the control that had it (or its twin,
// when a redraw replaced it) if nothing holds focus then — a button disabled while its press was on its way cannot
// take it back when the dialog closes, and focus is left on the page.
export function focusBack() {
  const opener = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null;
  const twin = opener && sameIn(opener);
  return () => {
    if (document.activeElement && document.activeElement !== document.body) return; // the answer moved it on
    const back = opener?.isConnected ? opener : twin ? document.querySelector(twin) : null;
    /** @type {HTMLElement | null} */ (back)?.focus({ preventScroll: true });
  };
}

// The one modal dialog every question is asked in (a control's reason, a plan's new time, a cancel's cleanup):
// `title`, the `parts` between it and the buttons, `action` (submits) and Go back. Resolves to `answer()` when
// the person presses `action`, or null when they go back, press Escape or are signed out (`closeQuestions`); the
// dialog is gone either way; one is open at a time (a second asked meanwhile resolves to null at once). Focus
// starts on `focused` (default: the action's button); `opened(dialog)` runs once it shows (a part filled later
// checks `dialog.open` first: the person may have gone).
/** @param {{title: string, action: string, parts: any[], answer: () => any, focused?: HTMLElement | null, opened?: ((dialog: HTMLDialogElement) => void) | null, tone?: string | null}} question */
export function modal({ title, action, parts, answer, focused = null, opened = null, tone = null }) {
  return new Promise((resolve) => {
    // One question at a time: a second (a double tap that got past its button) is not stacked on the first.
    if (document.querySelector('dialog.ask[open]')) {
      resolve(null);
      return;
    }
    const dialog = /** @type {HTMLDialogElement} */ (el('dialog', { class: 'ask', 'aria-labelledby': 'ask-title' }));
    const giveBack = focusBack();
    const close = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
      // The browser gives focus back to the opener only if it can: a button disabled while its press was asked, or
      // replaced by a redraw behind the dialog, leaves it on the page. Once the press has let go of its button:
      setTimeout(giveBack, 0);
    };
    // Drawn as the button that opened it: a cancel's in the danger colour, not the blue of a harmless go-ahead.
    const go = el('button', { type: 'submit', class: tone === 'danger' ? 'danger' : 'primary', 'data-ask': 'go' }, action);
    dialog.append(el('form', { method: 'dialog', onsubmit: (event) => { event.preventDefault(); close(answer()); } },
      el('h2', { id: 'ask-title' }, title),
      parts,
      el('div', { class: 'buttons' },
        go,
        el('button', { type: 'button', 'data-ask': 'back', onclick: () => close(null) }, 'Go back'))));
    // What the action will do (a part with the id ask-what) is the dialog's description: said with its title as focus
    // enters, not left to be found behind the text box.
    if (dialog.querySelector('#ask-what')) dialog.setAttribute('aria-describedby', 'ask-what');
    dialog.addEventListener('cancel', (event) => { event.preventDefault(); close(null); });
    document.body.append(dialog);
    dialog.showModal();
    (focused || go).focus();
    opened?.(dialog);
  });
}

// Every open dialog closed and each question called off (resolving null), as the sign-out does: what each question
// asked and what was typed in it, for the sign-in page to say was not sent: [{title, typed: [text…]}]. A dialog that
// asks nothing (the shortcuts' help) is only closed: nothing of it was to be sent.
export function closeQuestions() {
  const asked = [];
  for (const dialog of document.querySelectorAll('dialog')) {
    if (dialog.classList.contains('ask')) {
      asked.push({
        title: dialog.querySelector('#ask-title')?.textContent || '',
        typed: [...dialog.querySelectorAll('textarea')].map((box) => /** @type {HTMLTextAreaElement} */ (box).value.trim()).filter(Boolean),
      });
    }
    dialog.dispatchEvent(new Event('cancel', { cancelable: true }));
  }
  return asked;
}

// What a person pressed or typed that a sign-out stopped, said on the sign-in page and again once signed in
// (kept in sessionStorage: a reload of the sign-in page keeps it too).
const UNSENT = 'console.unsent';
const unsentList = () => {
  try {
    const kept = JSON.parse(sessionStorage.getItem(UNSENT) || '[]');
    return Array.isArray(kept) ? kept.map(String) : [];
  } catch {
    return [];
  }
};

export function unsent(text) {
  sessionStorage.setItem(UNSENT, JSON.stringify([...unsentList(), text]));
  showUnsent();
}

// The sign-in page's list of what was not sent (#sign-in-unsent), filled from what is kept.
export function showUnsent() {
  const box = document.getElementById('sign-in-unsent');
  const all = unsentList();
  if (!box) return;
  fill(box, all.length ? el('div', { class: 'notice notice-warning' }, el('ul', {}, all.map((text) => el('li', {}, text)))) : null);
}

// What was not sent, taken (said once signed in again).
export function takeUnsent() {
  const all = unsentList();
  sessionStorage.removeItem(UNSENT);
  return all;
}

// Asks for a reason or note before a control that takes one; resolves to the text, or null if called off.
// Without a `label` it only asks to confirm (no text box), and resolves to '' when confirmed. `what`: a line
// under the question saying what the action will do (or the nodes that say it: a list of what it skips);
// `required`: the text may not be left empty; `extra`: nodes shown below the text (what the action acts on, a
// choice the caller reads once the dialog resolves); `tone`: the control's (a danger one's go-ahead drawn so).
/** @param {{title: string, action: string, label?: string | null, what?: string | Node[] | null, required?: boolean, extra?: Node[] | null, tone?: string | null}} question */
export function ask({ title, label = null, action, what = null, required = false, extra = null, tone = null }) {
  const input = label ? el('textarea', { id: 'ask-text', rows: '3', maxlength: '500', required }) : null;
  return modal({
    title, action, focused: input, tone, answer: () => (input ? input.value.trim() : ''),
    parts: [
      what && el('div', { id: 'ask-what' }, typeof what === 'string' ? el('p', {}, what) : what),
      input && [el('label', { for: 'ask-text' }, label), input],
      extra],
  });
}

// A table; on a narrow screen each row becomes a card whose cells are labelled by their column (data-label).
export function table(caption, headers, rows) {
  for (const row of rows) labelled(row, headers);
  return el('div', { class: 'table-wrap' },
    el('table', { class: 'cards' },
      el('caption', {}, caption),
      el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows)));
}

function labelled(row, headers) {
  [...row.children].forEach((cell, i) => { if (headers[i]) cell.setAttribute('data-label', headers[i]); });
  return row;
}

// The rows of a table's body kept in step with `items` by key: a row whose `shape` (what it shows) has not
// changed is left as it is — focus, selection and the reading position stay put however often the page
// refreshes — a changed one is rebuilt (focus moved to the same control of its new row), a gone one removed,
// and rows are moved only when their order changed. Each row is {key, shape, render()}; render() builds the <tr>.
export function keyedRows(body, headers, items) {
  const old = new Map([...body.children].map((row) => [/** @type {HTMLElement} */ (row).dataset.key, row]));
  const wanted = new Set(items.map((item) => String(item.key)));
  for (const [key, row] of old) if (!wanted.has(key)) row.remove();
  let at = body.firstElementChild;
  for (const item of items) {
    const key = String(item.key);
    let row = /** @type {HTMLElement | undefined} */ (old.get(key));
    if (!row || row.dataset.shape !== item.shape) {
      const fresh = labelled(item.render(), headers);
      fresh.dataset.key = key;
      fresh.dataset.shape = item.shape;
      const focused = row?.contains(document.activeElement) ? sameIn(/** @type {HTMLElement} */ (document.activeElement)) : null;
      if (row) row.replaceWith(fresh); else body.insertBefore(fresh, at);
      if (focused) /** @type {HTMLElement | null} */ (fresh.querySelector(focused))?.focus({ preventScroll: true });
      row = fresh;
    } else if (row !== at) {
      body.insertBefore(row, at);
    }
    at = row.nextElementSibling;
  }
}

// A selector for the control a rebuilt part should give focus back to: the same link, box or button (by the
// attributes that say what it acts on) in the same part of the page (its nearest ancestor with an id: a step's
// button drawn in the banner and in the step's row are two controls), or null for anything else.
const NAMING = ['data-control', 'data-select', 'href', 'data-press', 'data-choice', 'data-step', 'data-phase', 'data-steps-to', 'id'];
function sameIn(node) {
  const named = NAMING.filter((name) => node.hasAttribute(name));
  if (!named.length) return null;
  const part = node.parentElement?.closest('[id]');
  return `${part ? `#${CSS.escape(part.id)} ` : ''}${node.tagName.toLowerCase()}`
    + named.map((name) => `[${name}="${CSS.escape(node.getAttribute(name) || '')}"]`).join('');
}

// Before `root` is rebuilt: the function that, after, puts back where the person was in it — focus on the same
// control, when the focused one was inside and the rebuild took it away (a live page redrawn under a keyboard
// user's focus), and each disclosure they had opened (a `details` with an id: a step's attempts, its ids).
export function keepPlace(root) {
  const active = document.activeElement;
  const selector = active instanceof HTMLElement && root.contains(active) ? sameIn(active) : null;
  const opened = [...root.querySelectorAll('details[open][id]')].map((details) => details.id);
  return () => {
    for (const id of opened) root.querySelector(`details#${CSS.escape(id)}`)?.setAttribute('open', '');
    if (selector && !active?.isConnected) /** @type {HTMLElement | null} */ (root.querySelector(selector))?.focus({ preventScroll: true });
  };
}

// An empty table whose body `keyedRows` fills: {node, body}.
export function keyedTable(caption, headers, attrs = {}) {
  const body = el('tbody');
  return {
    body,
    node: el('div', { class: 'table-wrap' }, el('table', { class: 'cards', ...attrs },
      el('caption', {}, caption), el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col' }, h)))), body)),
  };
}
