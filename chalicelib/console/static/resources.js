// What a run left in the game world: its resources, its cleanup's progress, and the cancel dialog's
// "clean up what this run left" with the cleanup plan (GET /runs/{id}/resources, /cleanup-plan).
//
// The run page gives this module one section and one question: `ledgerSection` renders the ledger on
// each poll (with the run's log, whose dispatch rows say when what an answer listed could not be recorded:
// `resources_refused`, said in red, never "nothing recorded" as if no answer had listed anything) (and holds the run page's Clean up of a finished run, with its progress), and `askCancel` replaces the plain reason prompt for a control that has an option field
// (cancel's `cleanup`). Nothing here decides what is legal: the API's plan says whether a cancel would
// clean up, and the control's answer says what it did.
//
// A ledger may hold thousands of resources of 16 KiB each: the section reads the newest page (more on
// "Show older"), and reads it again only when the run's detail says the ledger moved (its `ledger`: the
// counts by status and the last change), never on every poll. Its counts and the cleanup's progress come
// from that detail, so they are whole whatever is shown. A read that fails (a 502, a timeout) is said in
// this section alone and tried again on the next poll: the page's steps and controls never wait for it.

import { get } from './api.js';
import { namer } from './names.js';
import { badge, el, fill, modal, table } from './ui.js';

const PAGE = 100; // the API ends a page sooner when its resources are large
const PLAN_SHOWN = 50; // the cancel dialog lists the first reverts and counts the rest

function named(resource) {
  return `${resource.kind} ${resource.id}`;
}

function revertWords(resource) {
  if (!resource.revert) return 'never reverted (no revert)';
  if (resource.revert_refused) return resource.revert_refused; // "cannot revert: undeclared action …": never sent
  return resource.revert.action === 'core.cue' ? `by hand: ${resource.revert.params?.instruction || 'a person undoes it'}`
    : resource.revert.action;
}

const failureWords = (error) => (error?.messages?.length ? error.messages.join(' ') : 'the API did not answer');

// How the cleanup's sentence ends: while a cancel's (or a failure's) cleanup goes on, what the run then is; while
// a finished run's Clean up (`late_cleanup`) goes on, that it keeps its status; once over, what is left.
function endWords(run, count) {
  if (run.late_cleanup === 'started') return `; the run stays ${run.status}.`;
  if (!run.late_cleanup && run.status !== run.cleanup_target) return run.cleanup_target ? `; then the run is ${run.cleanup_target}.` : '.';
  if (count('reverting') || (run.late_cleanup && count('live'))) return '.';
  return count('revert_failed') ? '; nothing more can be reverted: what could not be is listed below.'
    : '; nothing it could revert is left in the game world.';
}

// How the cleanup stands, from its revert steps (`resource_id` set) as GET /runs/{id} lists them and the
// ledger's counts by status (`ledger.counts`).
function progress(detail) {
  const reverts = detail.steps.filter((s) => s.resource_id != null);
  const { run } = detail;
  if (!reverts.length && !run.cleanup_target && !run.late_cleanup) return null;
  const count = (status) => detail.ledger?.counts?.[status] || 0;
  const parts = [`${count('reverted')} of ${Math.max(reverts.length, count('reverted') + count('reverting'))} reverted`];
  if (count('reverting')) parts.push(`${count('reverting')} to go`);
  if (count('revert_failed')) parts.push(`${count('revert_failed')} could not be reverted`);
  return el('p', { id: 'cleanup-progress', 'data-target': run.cleanup_target || '', 'data-late': run.late_cleanup || '' },
    el('strong', {}, 'Cleanup: '), parts.join(', '), endWords(run, count));
}

// `controls`: the section's buttons (a finished run's Clean up), which the run page fills from what it is offered.
export function ledgerSection(runId) {
  const body = el('div', { id: 'run-resources' });
  const controls = el('div', { class: 'buttons', id: 'resources-controls' });
  const element = el('section', { 'aria-labelledby': 'resources-title' },
    el('h2', { id: 'resources-title' }, 'Left in the game world'), body, controls);
  let readAt = null; // the ledger state (GET /runs/{id}'s `ledger`) the list was read at
  let resources = []; // as read, newest first
  let cursor = null; // where the older ones go on (null: none left)
  let wanted = PAGE; // how many the person has asked to see
  let failure = null; // the last read's error, until a read works
  let detail = null;
  let refused = []; // the dispatch rows whose answer's resources could not be recorded
  let shown = '';

  // The newest `count` resources (or all, if fewer), page by page.
  async function newest(count) {
    const found = [];
    let next = null;
    do {
      const page = await get(`/runs/${runId}/resources?limit=${PAGE}${next != null ? `&cursor=${next}` : ''}`);
      found.push(...page.resources);
      next = page.next_cursor;
    } while (next != null && found.length < count);
    return { found, next };
  }

  async function read(work) {
    try {
      await work();
      failure = null;
    } catch (error) {
      failure = error; // said in this section; the next poll tries again
    }
  }

  function render() {
    const state = JSON.stringify([detail.ledger, detail.run.cleanup_target, detail.run.late_cleanup,
      detail.steps.filter((s) => s.resource_id != null),
      resources, cursor, failure && failureWords(failure), refused.map((row) => row.id)]);
    if (state === shown) return; // re-rendered only when something changed, so focus stays put
    shown = state;
    const counts = detail.ledger?.counts || {};
    const recorded = Object.values(counts).reduce((sum, n) => sum + n, 0);
    const error = failure && el('p', { id: 'resources-error', class: 'error-text', role: 'alert' },
      `What the run left could not be read: ${failureWords(failure)}. It is tried again on the next update.`);
    const stepOf = namer(detail.steps);
    // What an answer listed and the ledger could not record: it may be in the game world, unknown to any cleanup.
    const unrecorded = refused.map((row) => el('p', { class: 'error-text', 'data-unrecorded': row.step_id },
      `What ${stepOf(row)}'s answer listed could not be recorded: ${row.detail.resources_refused}.`
      + ' It may still be in the game world, and no cleanup knows of it.'));
    if (!recorded && !failure) {
      fill(body, unrecorded.length ? unrecorded : el('p', { class: 'muted' }, 'Nothing recorded: no answer listed what it created.'));
      return;
    }
    const rows = resources.map((r) => el('tr', { 'data-resource': named(r), 'data-status': r.status },
      el('td', {}, r.kind), el('td', {}, el('code', {}, r.id)), el('td', {}, badge(r.status)),
      el('td', {}, revertWords(r)), el('td', {}, stepOf(r))));
    fill(body,
      progress(detail),
      el('p', { id: 'resources-live' }, `${counts.live || 0} live of ${recorded} recorded.`),
      unrecorded,
      error,
      rows.length ? table(`What run ${runId} left, newest first`, ['Kind', 'Id', 'Status', 'Revert', 'Recorded by'], rows) : null,
      cursor != null && !failure ? el('div', { class: 'buttons' }, el('button', { type: 'button', id: 'resources-older', onclick: older },
        `Show older (${resources.length} of ${recorded} shown)`)) : null);
  }

  async function older() {
    await read(async () => {
      const page = await get(`/runs/${runId}/resources?limit=${PAGE}&cursor=${cursor}`);
      resources = [...resources, ...page.resources];
      cursor = page.next_cursor;
      wanted = resources.length;
    });
    render();
  }

  // Each poll: the counts, the cleanup's progress and what could not be recorded at once, from the run's detail (with the page's other
  // parts), then the list, read again only when the ledger moved (or the last read failed); never throws.
  // `entries`: the run's log as the page has read it (its step.dispatch rows).
  async function refresh(latest, entries = []) {
    detail = latest;
    refused = entries.filter((entry) => entry.kind === 'step.dispatch' && entry.detail?.resources_refused);
    const state = JSON.stringify(latest.ledger);
    if (!Object.keys(latest.ledger?.counts || {}).length) {
      [resources, cursor, readAt, failure] = [[], null, state, null]; // nothing recorded: nothing to read
    }
    render();
    if (state === readAt && !failure) return;
    await read(async () => {
      ({ found: resources, next: cursor } = await newest(wanted));
      readAt = state;
    });
    render();
  }

  return { element, refresh, controls };
}

// The cancel dialog: what a cancel does, the reason, and — once the API's plan says a cleanup would happen —
// a checkbox "Clean up what this run left" with the plan: how many reverts (how many by hand), the first of
// them listed newest first. The dialog opens at once; the plan fills in when it comes. Without a plan (its
// read failed) the dialog says so and still offers the cleanup, unchecked: the API decides whether there is
// anything to revert. Resolves to the body to send, or null when the person goes back.
export function askCancel(runId, { title, label = 'Reason (optional)', action, field = 'reason', option = 'cleanup', what = null, tone = null }) {
  const text = el('textarea', { id: 'ask-text', rows: '3', maxlength: '500' });
  const cleanup = el('div', { id: 'ask-cleanup-choice' });
  let box = null;
  const answer = () => {
    const body = {};
    if (text.value.trim()) body[field] = text.value.trim();
    if (box?.checked) body[option] = true;
    return body;
  };
  const choice = (checked, words) => {
    box = el('input', { type: 'checkbox', id: 'ask-cleanup', checked });
    return el('p', {}, box, ' ', el('label', { for: 'ask-cleanup' }, words));
  };
  const parts = [what && el('p', { id: 'ask-what' }, what), el('label', { for: 'ask-text' }, label), text, cleanup];
  // The plan, filled in when it comes: by then the person may have gone (the dialog no longer open).
  const fillPlan = (dialog) => get(`/runs/${runId}/cleanup-plan?limit=${PLAN_SHOWN}`).then((plan) => {
    cleanup.dataset.planRead = String(plan.cleans_up); // the page has the plan: whether a cleanup is offered
    // What no cleanup reverts is said whether or not one is offered: it stays in the world either way.
    const left = plan.left?.length
      ? el('p', { id: 'cleanup-left', class: 'muted' }, `It leaves in the world: ${plan.left.map((l) => `${l.resources} (${l.why})`).join('; ')}.`) : null;
    const notes = [plan.undecided && el('p', { id: 'cleanup-undecided', class: 'muted' },
      `No cleanup yet: decide ${plan.undecided} first (the game may or may not have applied it).`), left];
    if (dialog.open) cleanup.replaceChildren(...notes.filter(Boolean));
    if (!plan.cleans_up || !dialog.open) return;
    const { reverts, by_hand: byHand } = plan.counts;
    const more = reverts - plan.reverts.length;
    cleanup.replaceChildren(
      choice(true, 'Clean up what this run left'),
      el('div', { id: 'cleanup-plan', 'data-reverts': String(reverts) },
        el('p', {}, reverts ? `It reverts ${reverts} ${reverts === 1 ? 'thing' : 'things'}${byHand ? ` (${byHand} by hand)` : ''}, newest first:`
          : 'Nothing is live yet.',
        plan.in_flight ? ` ${plan.in_flight} step(s) in flight may add to it.` : ''),
        el('ol', {}, plan.reverts.map((r) => el('li', { 'data-plan': named(r) }, `${named(r)} (${revertWords(r)})`))),
        more > 0 ? el('p', { id: 'cleanup-plan-more', class: 'muted' }, `… and ${more} more.`) : null));
    if (left) cleanup.append(left);
  }, (error) => {
    if (!dialog.open) return;
    cleanup.dataset.planRead = 'failed';
    cleanup.replaceChildren(
      el('p', { id: 'cleanup-plan-failed', class: 'error-text', role: 'alert' },
        `The cleanup plan could not be read (${failureWords(error)}), so what a cleanup would revert is not shown.`),
      choice(false, 'Clean up what this run left anyway (a run that left nothing is cancelled as without)'));
  });
  return modal({ title, action, parts, answer, focused: text, opened: fillPlan, tone });
}
