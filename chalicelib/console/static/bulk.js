// @ts-check
// Pause, resume or cancel several runs with one reason, in one POST /runs/bulk: the runs ticked on the list
// (held to how many were ticked), or every run the list's filters match (a preview first — how many and the
// first of them — then the press, held to that count: a filter that matches another number changes nothing).
// Each run is still guarded by the API on its own; one summary says what took and what did not, and why. A bulk
// press is claimed as every press is (press.js): from the tap to its answer its buttons say "Sending…", and a
// second tap neither asks again nor sends a second press behind the first.

import { asApiError, post } from './api.js';
import { explain } from './explain.js';
import { mayPress } from './plans.js';
import { claim, onItsWay, pressAttrs } from './press.js';
import { ask, capitalised, controlOf, declaredControls, el, labelOf, notice, unsent, when } from './ui.js';

// The bulk controls this person may press, as the server says: those POST /runs/bulk presses (GET /vocabulary's
// `bulk`) that one of the session's roles (GET /console/session) may press (each control's declared `roles`).
export function bulkControls(session) {
  return declaredControls().filter((declared) => declared.bulk && mayPress(session, declared.name)).map((declared) => declared.name);
}

// A run control's label said of several runs: "Pause run" → "Pause 2 runs" (never "Pause run 2", which reads
// as run number 2); a label that names no run gets the count after it ("Clean up 2 runs"). `matching`: "Pause
// all 2 matching runs".
export function forRuns(label, count, matching = false) {
  return `${label.replace(/ run$/, '')} ${matching ? 'all ' : ''}${count} ${matching ? 'matching ' : ''}${count === 1 ? 'run' : 'runs'}`;
}

// Asks once, presses once (POST /runs/bulk on the ticked runs, held to how many were ticked), and says what
// happened; resolves when it is answered.
export async function bulkAct(name, ids) {
  const declared = controlOf(name);
  const label = declared?.label || name;
  const field = declared?.question ? declared.note_field : null;
  const runs = ids.map((id) => `run ${id}`).join(', ');
  const what = name === 'cancel'
    ? `Each of ${runs} stops for good: its open steps are cancelled, no later phase begins, and it cannot be resumed.`
    : `${capitalised(label)} is pressed on ${runs} at once; a run that has moved meanwhile refuses and is listed.`;
  const text = await ask({
    title: `${forRuns(label, ids.length)}?`,
    label: field ? `${capitalised(field)} (optional), the same for each` : null,
    action: forRuns(label, ids.length), what, tone: declared?.tone,
  });
  if (text === null) return false;
  await pressBulk(name, { ids }, ids.length, field && text ? { [field]: text } : {});
  return true;
}

// One POST /runs/bulk held to `count` (the runs the person saw), and a summary of what took and what did not. It
// carries an Idempotency-Key (api.js), the same on a re-send after a lost answer: each run the first sending changed
// is answered as changed (`replayed`), never refused as "already paused".
async function pressBulk(name, filter, count, extra) {
  const pressed = forRuns(controlOf(name)?.label || name, count);
  const outcome = {};
  let answer;
  try {
    answer = await post('/runs/bulk', { control: name, filter, expected_count: count, ...extra }, { outcome, label: pressed });
  } catch (caught) {
    const error = asApiError(caught);
    const lost = outcome.unanswered > 0;
    if (error.status === 401) { // said on the sign-in page, and again once signed in (ui.js unsent), the reason kept
      const [field, text] = Object.entries(extra).find(([, value]) => typeof value === 'string') || [];
      const reason = text ? ` Your ${field}, not sent: “${text}”.` : '';
      unsent(lost ? `Your ${pressed} may or may not have taken (its answer was lost, then your sign-in ended): look at`
        + ` the runs before pressing it again.${reason}` : `Your ${pressed} was not sent: your sign-in ended first.${reason}`);
      return;
    }
    if (lost && error.status === 409 && Number.isInteger(error.detail.count)) {
      notice(`${pressed}: its answer was lost on the way, and sent again the filters match ${error.detail.count} now,`
        + ` not ${count}: the first sending most likely took, and nothing more was changed. The list shows each run as it is now.`, 'warning');
    } else if (lost && error.status === 503) {
      notice(`${pressed}: the API has not answered, so whether it took is not known. The list is read again when the API`
        + ' answers: look at it before pressing again.', 'warning');
    } else {
      notice(`Not done: ${error.messages.join(' ')}`, 'warning');
    }
    return;
  }
  const { changed, refused } = answer;
  const replayed = changed.some((run) => run.replayed);
  const done = changed.length
    ? `${controlOf(name)?.done || name}: ${changed.length} ${changed.length === 1 ? 'run' : 'runs'} (${said(changed)}).`
    : 'Nothing took.';
  const lost = replayed ? ' Its answer was lost on the way; sent again as the same press, it changed nothing more.' : '';
  notice(`${done}${lost}${refused.length ? ` Not done (${refused.length}):` : ''}`, refused.length ? 'warning' : 'ok',
    refused.length ? el('ul', { id: 'bulk-refused' }, refused.map(({ id, why }) => el('li', { 'data-run': id }, `run ${id}: ${why}`))) : '');
}

// The runs list's days (`from`, `to`: "2026-03-01", both included, in the viewer's zone) as the API's window of
// scheduled times, [from, to): from the first day's midnight to the midnight after the last; an edge not given is
// left out. `inverted` when the last day is before the first: no run can match.
export function scheduledWindow(filters) {
  const midnight = (day, after = 0) => {
    const [y, m, d] = day.split('-').map(Number);
    return new Date(y, m - 1, d + after).toISOString();
  };
  const window = {};
  if (filters.from) window.from = midnight(filters.from);
  if (filters.to) window.to = midnight(filters.to, 1);
  return { window, inverted: Boolean(filters.from && filters.to && filters.to < filters.from) };
}

// The API's filter for the runs list's filters (runs.js: status, definition, waiting, rehearsals, days), or null
// for a search, which names runs no filter of the API can. A bulk window has both edges: one the list leaves open
// is the far one the API reads (the calendar's 1970 and 9000).
export function filterOf(filters) {
  if (filters.q) return null;
  const filter = { rehearsal: filters.rehearsals === 'include' ? 'include' : 'exclude' };
  if (filters.status) filter.status = filters.status;
  if (filters.definition) filter.definition = Number(filters.definition);
  if (filters.waiting) filter.waiting = filters.waiting;
  const { window } = scheduledWindow(filters);
  if (window.from || window.to) {
    filter.scheduled_between = { from: window.from || '1970-01-01T00:00:00Z', to: window.to || '9000-01-01T00:00:00Z' };
  }
  return filter;
}

function said(runs) {
  return runs.map((run) => `run ${run.id}`).join(', ');
}

// Asks about every run `filter` matches, showing the preview (how many, the first of them), then presses once;
// resolves to whether it pressed.
export async function bulkByFilter(name, filter) {
  const declared = controlOf(name);
  const label = declared?.label || name;
  const field = declared?.question ? declared.note_field : null;
  let seen;
  try {
    seen = await post('/runs/bulk', { control: name, filter, preview: true });
  } catch (error) {
    explain(error, 'Previewing the runs these filters match');
    return false;
  }
  if (!seen.count) {
    notice('No run matches these filters: nothing to do.', 'info');
    return false;
  }
  const runs = seen.count === 1 ? 'run' : 'runs';
  const more = seen.count - seen.runs.length;
  const first = el('ul', { id: 'bulk-preview' }, seen.runs.map((run) => el('li', { 'data-run': run.id },
    `Run ${run.id} · ${labelOf(run.status)} · scheduled `, when(run.scheduled_for))), more > 0 ? el('li', {}, `and ${more} more`) : null);
  const box = name === 'cancel' ? el('input', { type: 'checkbox', id: 'bulk-cleanup' }) : null;
  const text = await ask({
    title: `${forRuns(label, seen.count, true)}?`,
    label: field ? `${capitalised(field)} (optional), the same for each` : null,
    action: forRuns(label, seen.count),
    what: `These filters match ${seen.count} ${runs} now.${name === 'cancel' ? ' Each stops for good: its open steps are'
      + ' cancelled and it cannot be resumed.' : ''} A run that has moved meanwhile refuses and is listed; if the count`
      + ' has changed by the press, nothing is done.',
    extra: [el('p', { id: 'bulk-preview-count' }, more > 0 ? `The first ${seen.runs.length} of ${seen.count}:` : `The ${seen.count}:`), first,
      box ? el('p', {}, box, ' ', el('label', { for: 'bulk-cleanup' }, 'Clean up what each run left in the game first')) : null]
      .filter((node) => node !== null),
  });
  if (text === null) return false;
  await pressBulk(name, filter, seen.count, { ...(text && field ? { [field]: text } : {}), ...(box?.checked ? { cleanup: true } : {}) });
  return true;
}

// `filters()`: the runs list's filters as they stand (for the bar's "every run matching these filters").
export function bulkBar(session, selected, after, filters) {
  const names = bulkControls(session);
  if (!names.length) return null;
  const count = el('span', { id: 'bulk-count', 'aria-live': 'polite' });
  // One bulk press of a control at a time, by the ticked runs or by the filters: its buttons share one claim.
  const pathOf = (name) => `/runs/bulk#${name}`;
  const pressed = async (name, press) => {
    const release = claim(pathOf(name));
    if (!release) return;
    try {
      if (await press()) after();
    } finally {
      release();
      refresh(); // a button with nothing to act on stays disabled
    }
  };
  const buttons = names.map((name) => el('button', {
    type: 'button', 'data-bulk': name, class: controlOf(name)?.tone || null,
    onclick: () => selected.size && pressed(name, () => bulkAct(name, [...selected])),
    ...pressAttrs(pathOf(name), controlOf(name)?.label || name),
  }, controlOf(name)?.label || name)); // read after the count: "2 selected: Pause run"
  const matching = names.map((name) => el('button', {
    type: 'button', 'data-bulk-filter': name, class: controlOf(name)?.tone || null,
    onclick: () => {
      const filter = filterOf(filters());
      return filter && pressed(name, () => bulkByFilter(name, filter));
    },
    ...pressAttrs(pathOf(name), `${capitalised(controlOf(name)?.label || name)}: all matching…`),
  }, `${capitalised(controlOf(name)?.label || name)}: all matching…`));
  const bar = el('div', { id: 'bulk-bars' },
    el('div', { class: 'buttons bulk', id: 'bulk-bar', role: 'group', 'aria-label': 'Selected runs' }, count, buttons),
    el('div', { class: 'buttons bulk', id: 'bulk-filter', role: 'group', 'aria-label': 'Every run matching the filters' },
      el('span', {}, 'Every run matching the filters:'), matching));
  function refresh() {
    count.textContent = selected.size ? `${selected.size} selected:` : 'Select runs to act on several at once.';
    const searched = !filterOf(filters());
    names.forEach((name, i) => {
      /** @type {HTMLButtonElement} */ (buttons[i]).disabled = !selected.size || onItsWay(pathOf(name));
      /** @type {HTMLButtonElement} */ (matching[i]).disabled = searched || onItsWay(pathOf(name));
      matching[i].title = searched ? 'A search is not a filter: clear it to act on every run matching the filters' : '';
    });
  }
  return { node: bar, refresh };
}
