// The runs list: newest first, filtered by status and definition, a page at a time, kept fresh.

import { get } from './api.js';
import { Poller, freshness } from './poll.js';
import { badge, el, heading, isTerminalRun, needYou, notice, runStatuses, table, when } from './ui.js';

const PAGE_SIZE = 25;
const SOON_MS = 120000; // a scheduled run this close to its time counts as live

export function isLive(run) {
  if (isTerminalRun(run.status)) return false;
  return run.status !== 'scheduled' || Date.parse(run.scheduled_for) - Date.now() < SOON_MS;
}

function hashFor(filters) {
  const query = new URLSearchParams(Object.entries(filters).filter(([, value]) => value));
  return `#/runs${query.toString() ? `?${query}` : ''}`;
}

// "3 min" since a time: how long a run has waited.
export function waitedFor(iso) {
  const minutes = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 60000));
  if (minutes < 1) return 'under a minute';
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${minutes % 60} min`;
}

function waitingCell(waiting) {
  if (!waiting) return el('span', { class: 'muted' }, '—');
  return el('span', { 'data-waiting': waiting.for }, `waiting for: ${waiting.for}`,
    waiting.since ? el('span', { class: 'muted' }, ' for ', el('time', { datetime: waiting.since }, waitedFor(waiting.since))) : '');
}

export function runsView(main, ctx, queryText = '') {
  const query = new URLSearchParams(queryText);
  const filters = { status: query.get('status') || '', definition: query.get('definition') || '', waiting: query.get('waiting') || '', cursor: query.get('cursor') || '' };
  const go = (changes) => ctx.navigate(hashFor({ ...filters, cursor: '', ...changes }));

  const statusSelect = el('select', { id: 'filter-status', onchange: () => go({ status: statusSelect.value }) },
    el('option', { value: '' }, 'any status'),
    runStatuses().map((s) => el('option', { value: s, selected: s === filters.status }, s)));
  const definitionSelect = el('select', { id: 'filter-definition', onchange: () => go({ definition: definitionSelect.value }) },
    el('option', { value: '' }, 'any definition'));
  // What a run may wait for, as the API's summary counts them (the console keeps no list of its own).
  const waitingSelect = el('select', { id: 'filter-waiting', onchange: () => go({ waiting: waitingSelect.value }) },
    el('option', { value: '' }, 'waiting or not'),
    filters.waiting ? el('option', { value: filters.waiting, selected: true }, filters.waiting) : null);
  let waitingKinds = null;
  const list = el('div', { id: 'runs-list' });
  const paging = el('nav', { class: 'paging', 'aria-label': 'Pages of runs' });
  const fresh = el('p', { class: 'freshness muted', id: 'freshness' });

  main.replaceChildren(
    heading(1, 'Runs'),
    el('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
      el('label', { for: 'filter-status' }, 'Status'), statusSelect,
      el('label', { for: 'filter-definition' }, 'Definition'), definitionSelect,
      el('label', { for: 'filter-waiting' }, 'Waiting for'), waitingSelect),
    list, paging, fresh,
  );

  let names = new Map();
  ctx.definitions().then((all) => {
    names = new Map(all.map((d) => [String(d.id), d.name]));
    for (const d of all) definitionSelect.append(el('option', { value: d.id, selected: String(d.id) === filters.definition }, d.name));
    poller.now();
  }).catch(() => { /* names are a nicety; ids still show */ });

  async function load() {
    const params = new URLSearchParams({ limit: PAGE_SIZE });
    if (filters.status) params.set('status', filters.status);
    if (filters.definition) params.set('definition_id', filters.definition);
    if (filters.waiting) params.set('waiting', filters.waiting);
    if (filters.cursor) params.set('cursor', filters.cursor);
    let page;
    try {
      page = await get(`/runs?${params}`);
    } catch (error) {
      if (error.status !== 401) notice(`The runs could not be loaded: ${error.messages.join(' ')}`, 'error');
      throw error;
    }
    const rows = page.runs.map((run) => el('tr', { 'data-run': run.id, 'data-status': run.status },
      el('td', {}, el('a', { href: `#/runs/${run.id}` }, `Run ${run.id}`)),
      el('td', {}, `${names.get(String(run.definition_id)) || `definition ${run.definition_id}`} (v${run.definition_version})`),
      el('td', {}, badge(run.status)),
      el('td', {}, badge(run.health)),
      el('td', {}, waitingCell(run.waiting)),
      el('td', {}, when(run.scheduled_for))));
    const counts = page.summary?.waiting;
    needYou(counts?.any || 0);
    if (counts && !waitingKinds) {
      waitingKinds = Object.keys(counts);
      waitingSelect.replaceChildren(el('option', { value: '' }, 'waiting or not'),
        ...waitingKinds.map((kind) => el('option', { value: kind, selected: kind === filters.waiting }, kind === 'any' ? 'anything' : kind)));
    }
    list.replaceChildren(rows.length
      ? table('Runs, newest first', ['Run', 'Definition', 'Status', 'Health', 'Waiting for', 'Scheduled for'], rows)
      : el('p', {}, 'No runs match.'));
    paging.replaceChildren(
      filters.cursor ? el('a', { href: hashFor({ ...filters, cursor: '' }) }, '← Newest runs') : '',
      page.next_cursor ? el('a', { href: hashFor({ ...filters, cursor: page.next_cursor }), id: 'older' }, 'Older runs →') : '',
    );
    return page.runs.some(isLive) ? 'live' : 'idle';
  }

  const poller = new Poller(load, freshness(fresh));
  poller.now();
  return () => poller.stop();
}
