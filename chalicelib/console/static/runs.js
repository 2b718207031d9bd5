// @ts-check
// The runs list, an inbox: first what needs the person (GET /inbox: an escalated wait first, then the longest
// wait), each row one line of its story and the one or two controls most likely needed, pressed from the row
// with the run page's own dialogs (press.js); then every run — what each waits for and for how long, filtered by
// status, definition, wait and the days it was scheduled for (all kept in the address), dry runs left out unless
// asked for, searched by run id or definition name, a page at a time. Kept fresh: a refresh rebuilds only the rows that changed, so focus and
// the reading position stay put. Runs selected on it are paused, resumed or cancelled together (bulk.js).

import { asApiError, get, getRun, pendingRetry } from './api.js';
import { escalatedWords, pausedOver, until } from './banners.js';
import { bulkBar, scheduledWindow } from './bulk.js';
import { postponeAction } from './plans.js';
import { Poller, freshness } from './poll.js';
import { claim, pressAttrs, pressLabel, pressPath, presser, specOf } from './press.js';
import {
  badge, el, fill, heading, isLive, keyedRows, keyedTable, labelOf, liveFrom, needYou, notice, rehearsalMark, runStatuses, say, sayState, since, span, waitOf,
  when, wordOf,
} from './ui.js';

const PAGE_SIZE = 25;
const INBOX_HEADERS = ['Run', 'Definition', 'What it needs', 'Controls'];

// A day as the address and a date input keep it ("2026-03-01"), or '' for anything else.
const day = (text) => (/^\d{4}-\d{2}-\d{2}$/.test(text || '') ? text : '');

function hashFor(filters) {
  const query = new URLSearchParams(Object.entries(filters).filter(([, value]) => value));
  return `#/runs${query.toString() ? `?${query}` : ''}`;
}

// How long a run has been going (started to finished, or to now: kept current between refreshes).
function lasted(run) {
  if (!run.started_at) return el('span', { class: 'muted' }, '—');
  if (!run.finished_at) return el('span', { 'data-duration': run.id }, since(run.started_at), ' so far');
  return el('span', { 'data-duration': run.id }, span(Date.parse(run.finished_at) - Date.parse(run.started_at)));
}

// The runs a search names: a run id (that run alone), else the definitions whose name holds the words.
async function searched(q, params, definitions) {
  if (/^\d+$/.test(q)) {
    try {
      const found = await get(`/runs/${q}`);
      return { runs: [{ ...found.run, waiting: found.waiting }], next_cursor: null };
    } catch (error) {
      if (error.status === 404) return { runs: [], next_cursor: null };
      throw error;
    }
  }
  const words = q.toLowerCase();
  const ids = (await definitions()).filter((d) => d.name.toLowerCase().includes(words)).map((d) => String(d.id)).slice(0, 10);
  const pages = await Promise.all(ids.map((id) => {
    const one = new URLSearchParams(params);
    one.set('definition_id', id);
    return get(`/runs?${one}`);
  }));
  const runs = pages.flatMap((page) => page.runs).sort((a, b) => b.id - a.id).slice(0, PAGE_SIZE);
  return { runs, next_cursor: pages.length === 1 ? pages[0].next_cursor : null, summary: pages[0]?.summary };
}

// A paused run's who and why (GET /runs's waiting.paused_by and reason): "paused by mod-mia: “boss bugged”", or
// for the engine's pause its cause, "stopped: Phase 1 · step 2 (world.spawn) HTTP 400: …".
function pausedWords(waiting) {
  if (!waiting.paused_by && !waiting.reason) return '';
  const by = waiting.paused_by;
  return el('div', { class: by ? 'muted' : 'error-text', 'data-paused-by': by || '' },
    by ? `paused by ${by}` : 'stopped', waiting.reason ? [': ', by ? `“${waiting.reason}”` : waiting.reason] : '');
}

function waitingCell(waiting) {
  if (!waiting) return el('span', { class: 'muted' }, '—');
  // Who has the wait, and since when (or whose hold of it lapsed), named as the API names them ("Mira (Discord)").
  const had = waiting.acknowledged_by
    ? el('span', { class: 'has-it', 'data-has-it': waiting.acknowledged_by },
      ` · ${waiting.acknowledged_by_named || waiting.acknowledged_by} has it for `, since(waiting.acknowledged_at))
    : waiting.lapsed_by ? el('span', { class: 'has-it', 'data-lapsed': waiting.lapsed_by },
      ` · ${waiting.lapsed_by_named || waiting.lapsed_by}'s hold lapsed: nobody has it`) : '';
  return el('span', { 'data-waiting': waiting.for }, `waiting for: ${waitOf(waiting)?.label ?? waiting.for}`,
    waiting.since ? el('span', { class: 'muted' }, ' for ', since(waiting.since)) : '', had,
    pausedWords(waiting));
}

export function runsView(main, ctx, queryText = '') {
  const query = new URLSearchParams(queryText);
  const filters = {
    status: query.get('status') || '', definition: query.get('definition') || '', waiting: query.get('waiting') || '',
    q: query.get('q') || '', cursor: query.get('cursor') || '', rehearsals: query.get('rehearsals') || '',
    from: day(query.get('from')), to: day(query.get('to')),
  };
  const go = (changes) => ctx.navigate(hashFor({ ...filters, cursor: '', ...changes }));

  const statusSelect = el('select', { id: 'filter-status', onchange: () => go({ status: statusSelect.value }) },
    el('option', { value: '' }, 'any status'),
    runStatuses().map((s) => el('option', { value: s, selected: s === filters.status }, labelOf(s))));
  const definitionSelect = el('select', { id: 'filter-definition', onchange: () => go({ definition: definitionSelect.value }) },
    el('option', { value: '' }, 'any definition'));
  // What a run may wait for, as the API's summary counts them (the console keeps no list of its own).
  const waitingSelect = el('select', { id: 'filter-waiting', onchange: () => go({ waiting: waitingSelect.value }) },
    el('option', { value: '' }, 'waiting or not'),
    filters.waiting ? el('option', { value: filters.waiting, selected: true }, filters.waiting) : null);
  const rehearsals = el('input', {
    type: 'checkbox', id: 'filter-rehearsals', checked: filters.rehearsals === 'include',
    onchange: () => go({ rehearsals: rehearsals.checked ? 'include' : '' }),
  });
  // The days a run was scheduled for, both included, in the viewer's zone (an old event is found by its date).
  const fromInput = el('input', { type: 'date', id: 'filter-from', value: filters.from, max: filters.to || null,
    onchange: () => go({ from: day(fromInput.value) }) });
  const toInput = el('input', { type: 'date', id: 'filter-to', value: filters.to, min: filters.from || null,
    onchange: () => go({ to: day(toInput.value) }) });
  const search = el('input', { type: 'search', id: 'filter-search', value: filters.q, placeholder: 'a run id or a definition name', autocomplete: 'off' });
  let waitingKinds = null;
  let loadFailed = false; // the last load failed, and #connection says so
  const selected = new Set(); // run ids, kept across the list's refreshes
  const bulk = bulkBar(ctx.session(), selected, () => { selected.clear(); poller.now(); }, () => filters);
  const inboxHeading = heading(2, 'Needs you', { id: 'inbox-title' });
  const inbox = keyedTable('Runs that need you, most urgent first', INBOX_HEADERS, { id: 'inbox-table' });
  const inboxEmpty = el('p', { id: 'inbox-empty', class: 'muted', hidden: true }, 'Nothing needs you now.');
  const allHeaders = [...(bulk ? ['Select'] : []), 'Run', 'Definition', 'Status', 'Waiting for', 'Health',
    'Scheduled for', 'Started', 'Finished', 'Duration'];
  const all = keyedTable('Runs, newest first', allHeaders);
  const none = el('p', { id: 'runs-none', hidden: true });
  const list = el('div', { id: 'runs-list' }, all.node, none);
  const paging = el('nav', { class: 'paging', 'aria-label': 'Pages of runs' });
  const fresh = el('div', { id: 'freshness' });

  fill(main, // the bulk bar is null for a role with no bulk control
    heading(1, 'Runs'),
    el('section', { id: 'inbox', 'aria-labelledby': 'inbox-title' }, inboxHeading, inbox.node, inboxEmpty),
    el('h2', { id: 'all-runs-title' }, 'All runs'),
    el('form', { class: 'filters', role: 'search', onsubmit: (e) => { e.preventDefault(); go({ q: search.value.trim() }); } },
      el('label', { for: 'filter-search' }, 'Search'), el('div', { class: 'inline' }, search, el('button', { type: 'submit', id: 'search-go' }, 'Find')),
      el('label', { for: 'filter-status' }, 'Status'), statusSelect,
      el('label', { for: 'filter-definition' }, 'Definition'), definitionSelect,
      el('label', { for: 'filter-waiting' }, 'Waiting for'), waitingSelect,
      el('label', { for: 'filter-from' }, 'Scheduled from'), fromInput,
      el('label', { for: 'filter-to' }, 'Scheduled to (included)'), toInput,
      el('label', { for: 'filter-rehearsals' }, 'Include rehearsals'), el('div', {}, rehearsals)),
    fresh, ...(bulk ? [bulk.node] : []), list, paging, // (replaceChildren would write a missing bar as "undefined")
  );

  let names = new Map();
  const definitionOf = (run) => `${names.get(String(run.definition_id)) || `definition ${run.definition_id}`} (v${run.definition_version})`;
  ctx.definitions().then((all) => {
    names = new Map(all.map((d) => [String(d.id), d.name]));
    for (const d of all) definitionSelect.append(el('option', { value: d.id, selected: String(d.id) === filters.definition }, d.name));
    poller.now();
  }).catch(() => { /* names are a nicety; ids still show */ });

  // A row's control, pressed as on the run's page: the run read first, so its dialog says what the run page's
  // would (the step's name and words, what a costly control will do); the row is re-read after. From the tap
  // until the answer (or the dialog called off) its button says "Sending…" and a second tap does nothing.
  async function pressFromRow(row, control) {
    const release = claim(pressPath(row.id, control.name, control.step_id));
    if (!release) return;
    try {
      let detail;
      try {
        // Past the first page of its steps if the step is (a page ends at 1,000 steps or about 1 MiB of them).
        detail = await getRun(row.id, (steps) => control.step_id == null || steps.some((s) => s.id === control.step_id));
      } catch (caught) {
        const error = asApiError(caught);
        if (error.status !== 401) notice(`Run ${row.id} could not be read: ${error.messages.join(' ')}`, 'error');
        return;
      }
      const step = control.step_id == null ? null : detail.steps.find((s) => s.id === control.step_id) || null;
      if (control.step_id != null && !step) { // gone from the run since the inbox was read: nothing to press
        notice(`Run ${row.id} no longer has that step: open its page to see where it stands.`, 'warning');
        return;
      }
      const { act } = presser({
        runId: row.id, detail: () => detail, session: ctx.session(), refresh: () => poller.now(), landing: inboxHeading, fromRow: true,
        // Resume over someone else's reasoned pause says it, as on the run's page (its waiting has who, why, since).
        explain: (name) => {
          const over = name === 'resume' && detail.waiting?.paused_by
            ? pausedOver({ by: detail.waiting.paused_by, why: detail.waiting.reason, at: detail.waiting.since }, ctx.session().sub) : null;
          return over ? [over] : null;
        },
        offered: (s) => (s ? detail.controls.steps[String(s.id)] || [] : detail.controls.run),
        runNamed: () => `run ${row.id} (${names.get(String(row.definition_id)) || `definition ${row.definition_id}`})`,
      });
      await act(control.name, step, null, release);
    } finally {
      release();
    }
  }

  function inboxRow(row) {
    const { waiting } = row;
    return el('tr', { 'data-inbox': row.id, 'data-waiting': waiting.for, 'data-escalated': waiting.escalated ? 'yes' : null },
      el('td', {}, el('a', { href: `#/runs/${row.id}` }, `Run ${row.id}`), rehearsalMark(row)),
      el('td', {}, definitionOf(row)),
      el('td', {}, el('span', { 'data-story': row.id, id: `story-${row.id}` }, row.story),
        waiting.since ? el('span', { class: 'muted' }, ' · for ', since(waiting.since)) : '',
        waiting.until ? el('span', { class: 'muted' }, until(waiting.until)) : '',
        waiting.escalated ? el('div', { class: 'error-text', 'data-escalation': row.id }, escalatedWords(waiting.escalated)) : ''),
      el('td', {}, el('div', { class: 'buttons' }, row.controls.map((control) => {
        const { action, tone } = specOf(control.name);
        const path = pressPath(row.id, control.name, control.step_id);
        return el('button', {
          type: 'button', class: tone, 'data-control': control.name, 'data-run': row.id,
          // The story names the step the button acts on ("… step 2 (light the bonfire) …"): read with the button.
          'aria-describedby': `story-${row.id}`, onclick: () => pressFromRow(row, control),
          ...pressAttrs(path, action, `${action}: run ${row.id}`),
        }, pressLabel(path, action));
      }))));
  }

  function runRow(run) {
    return el('tr', { 'data-run': run.id, 'data-status': run.status },
      bulk ? el('td', {}, el('input', {
        type: 'checkbox', 'data-select': run.id, checked: selected.has(run.id), 'aria-label': `Select run ${run.id}`,
        onchange: (event) => { if (event.target.checked) selected.add(run.id); else selected.delete(run.id); bulk.refresh(); },
      })) : null,
      el('td', {}, el('a', { href: `#/runs/${run.id}` }, `Run ${run.id}`), rehearsalMark(run)),
      el('td', {}, definitionOf(run)),
      el('td', {}, badge(run.status)),
      el('td', {}, waitingCell(run.waiting)),
      el('td', {}, badge(run.health)),
      el('td', {}, when(run.scheduled_for), postponeAction(ctx.session(), run, () => poller.now())),
      el('td', {}, when(run.started_at)),
      el('td', {}, when(run.finished_at)),
      el('td', {}, lasted(run)));
  }

  async function load() {
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (filters.status) params.set('status', filters.status);
    if (filters.definition) params.set('definition_id', filters.definition);
    if (filters.waiting) params.set('waiting', filters.waiting);
    if (filters.cursor) params.set('cursor', filters.cursor);
    params.set('rehearsal', filters.rehearsals === 'include' ? 'include' : 'exclude');
    const { window, inverted } = scheduledWindow(filters);
    for (const [edge, at] of Object.entries(window)) params.set(edge, at);
    let page;
    let needs;
    try {
      [page, needs] = await Promise.all([
        // days the wrong way round match nothing: asked of nobody, said below
        inverted ? { runs: [], next_cursor: null } : filters.q ? searched(filters.q, params, ctx.definitions) : get(`/runs?${params}`),
        get('/inbox'),
      ]);
    } catch (caught) {
      const error = asApiError(caught);
      if (error.status !== 401) { // beside the connection's state (a press's outcome stays in the notice), gone once a load works
        loadFailed = true;
        sayState('connection', `The runs could not be loaded: ${error.messages.join(' ')}.`, 'error', ' They are read again shortly.');
      }
      throw error;
    }
    if (loadFailed) {
      loadFailed = false;
      if (!pendingRetry()) say('connection', '');
    }
    needYou(needs.needs_you); // the header counts what the inbox holds: the runs this person can act on
    const named = [...names.entries()].join();
    // The rows shown keep their place while the list refreshes (a card that jumps when another run escalates puts
    // another run's Confirm under the finger); a new one joins at the end. The server's order, escalated first, is
    // the list's when it is opened.
    const place = new Map([...inbox.body.children].map((tr, i) => [/** @type {HTMLElement} */ (tr).dataset.key, i]));
    const at = (row) => place.get(String(row.id)) ?? place.size;
    keyedRows(inbox.body, INBOX_HEADERS, [...needs.runs].sort((a, b) => at(a) - at(b)).map((row) => ({ key: row.id, shape: JSON.stringify([row, named]), render: () => inboxRow(row) })));
    inbox.node.hidden = !needs.runs.length;
    inboxEmpty.hidden = Boolean(needs.runs.length);
    const shownIds = new Set(page.runs.map((run) => run.id));
    for (const id of [...selected]) if (!shownIds.has(id)) selected.delete(id);
    keyedRows(all.body, allHeaders, page.runs.map((run) => ({
      key: run.id, shape: JSON.stringify([run, named, selected.has(run.id)]), render: () => runRow(run),
    })));
    bulk?.refresh();
    const counts = page.summary?.waiting;
    if (counts && !waitingKinds) {
      waitingKinds = Object.keys(counts);
      waitingSelect.replaceChildren(el('option', { value: '' }, 'waiting or not'),
        ...waitingKinds.map((kind) => el('option', { value: kind, selected: kind === filters.waiting }, kind === 'any' ? 'anything' : (wordOf('waiting_for', kind)?.label ?? kind))));
    }
    all.node.hidden = !page.runs.length;
    none.hidden = Boolean(page.runs.length);
    none.textContent = inverted ? 'No run matches: the last day is before the first.'
      : filters.q ? `No run matches “${filters.q}” (a run id, or words of a definition's name).` : 'No runs match.';
    const pagingShape = JSON.stringify([filters, page.next_cursor]);
    if (paging.dataset.shape !== pagingShape) {
      paging.dataset.shape = pagingShape;
      paging.replaceChildren(
        filters.cursor ? el('a', { href: hashFor({ ...filters, cursor: '' }) }, '← Newest runs') : '',
        page.next_cursor ? el('a', { href: hashFor({ ...filters, cursor: page.next_cursor }), id: 'older' }, 'Older runs →') : '',
      );
    }
    shown = page.runs;
    return page.runs.some(isLive) ? 'live' : 'idle';
  }

  // An idle list is read again when its first scheduled run nears its time, not up to IDLE_MAX_MS later.
  let shown = [];
  const liveAt = () => {
    const soonest = Math.min(...shown.map(liveFrom).filter((at) => at !== null));
    return Number.isFinite(soonest) ? soonest : null;
  };
  const poller = new Poller(load, freshness(fresh), { counts: false, liveAt });
  poller.now();
  return () => poller.stop();
}
