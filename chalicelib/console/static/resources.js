// What a run left in the game world: its live resources, its cleanup's progress, and the cancel dialog's
// "clean up what this run left" with the cleanup plan (GET /runs/{id}/resources, /cleanup-plan).
//
// The run page gives this module one section and one question: `ledgerSection` renders the ledger on
// each poll (only when it changed, so focus stays put), and `askCancel` replaces the plain reason prompt
// for a control that has an option field (cancel's `cleanup`). Nothing here decides what is legal: the
// API's plan says whether a cancel would clean up, and the control's answer says what it did.

import { get } from './api.js';
import { badge, el, table } from './ui.js';

const PAGE = 500;

function named(resource) {
  return `${resource.kind} ${resource.id}`;
}

function revertWords(resource) {
  if (!resource.revert) return 'never reverted (no revert)';
  if (resource.revert_refused) return resource.revert_refused; // "cannot revert: undeclared action …": never sent
  return resource.revert.action === 'core.cue' ? `by hand: ${resource.revert.params?.instruction || 'a person undoes it'}`
    : resource.revert.action;
}

// Every resource of the run, newest first (the API pages them; the page shows them all).
async function allOf(runId) {
  const found = [];
  for (let cursor = null, first = true; first || cursor != null; first = false) {
    const page = await get(`/runs/${runId}/resources?limit=${PAGE}${cursor != null ? `&cursor=${cursor}` : ''}`);
    found.push(...page.resources);
    cursor = page.next_cursor;
  }
  return found;
}

// How the cleanup stands, from its revert steps (`resource_id` set) as GET /runs/{id} lists them.
function progress(detail, resources) {
  const reverts = detail.steps.filter((s) => s.resource_id != null);
  if (!reverts.length && !detail.run.cleanup_target) return null;
  const count = (status) => resources.filter((r) => r.status === status).length;
  const parts = [`${count('reverted')} of ${reverts.length} reverted`];
  if (count('reverting')) parts.push(`${count('reverting')} to go`);
  if (count('revert_failed')) parts.push(`${count('revert_failed')} could not be reverted`);
  const target = detail.run.cleanup_target;
  return el('p', { id: 'cleanup-progress', 'data-target': target || '' },
    el('strong', {}, 'Cleanup: '), parts.join(', '), target ? `; then the run is ${target}.` : '.');
}

export function ledgerSection(runId) {
  const body = el('div', { id: 'run-resources' });
  const element = el('section', { 'aria-labelledby': 'resources-title' },
    el('h2', { id: 'resources-title' }, 'Left in the game world'), body);
  let shown = '';

  async function refresh(detail) {
    const resources = await allOf(runId);
    const snapshot = JSON.stringify([resources, detail.run.cleanup_target, detail.steps.filter((s) => s.resource_id != null)]);
    if (snapshot === shown) return;
    shown = snapshot;
    if (!resources.length) {
      body.replaceChildren(el('p', { class: 'muted' }, 'Nothing recorded: no answer listed what it created.'));
      return;
    }
    const live = resources.filter((r) => r.status === 'live').length;
    const rows = resources.map((r) => el('tr', { 'data-resource': named(r), 'data-status': r.status },
      el('td', {}, r.kind), el('td', {}, el('code', {}, r.id)), el('td', {}, badge(r.status)),
      el('td', {}, revertWords(r)), el('td', {}, `step ${r.step_id}`)));
    body.replaceChildren(
      progress(detail, resources),
      el('p', { id: 'resources-live' }, `${live} live of ${resources.length} recorded.`),
      table(`What run ${runId} left, newest first`, ['Kind', 'Id', 'Status', 'Revert', 'Recorded by'], rows));
  }

  return { element, refresh };
}

// The cancel dialog: what a cancel does, the reason, and — once the API's plan says a cleanup would happen —
// a checkbox "Clean up what this run left" listing what would be reverted, newest first. The dialog opens at
// once; the plan fills in when it comes (without one, the plain cancel is offered). Resolves to the body to
// send, or null when the person goes back.
export function askCancel(runId, { title, label = 'Reason (optional)', action, field = 'reason', option = 'cleanup', what = null }) {
  return new Promise((resolve) => {
    const text = el('textarea', { id: 'ask-text', rows: '3', maxlength: '500' });
    const cleanup = el('div', { id: 'ask-cleanup-choice' });
    let box = null;
    const dialog = el('dialog', { class: 'ask', 'aria-labelledby': 'ask-title' });
    const close = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    const submit = (event) => {
      event.preventDefault();
      const body = {};
      if (text.value.trim()) body[field] = text.value.trim();
      if (box?.checked) body[option] = true;
      close(body);
    };
    dialog.append(el('form', { method: 'dialog', onsubmit: submit },
      el('h2', { id: 'ask-title' }, title),
      what && el('p', { id: 'ask-what' }, what),
      el('label', { for: 'ask-text' }, label), text,
      cleanup,
      el('div', { class: 'buttons' },
        el('button', { type: 'submit', class: 'primary', 'data-ask': 'go' }, action),
        el('button', { type: 'button', 'data-ask': 'back', onclick: () => close(null) }, 'Go back'))));
    dialog.addEventListener('cancel', (event) => { event.preventDefault(); close(null); });
    document.body.append(dialog);
    dialog.showModal();
    text.focus();
    get(`/runs/${runId}/cleanup-plan`).then((plan) => {
      cleanup.dataset.planRead = String(plan.cleans_up); // the page has the plan: whether a cleanup is offered
      // What no cleanup reverts is said whether or not one is offered: it stays in the world either way.
      const left = plan.left?.length
        ? el('p', { id: 'cleanup-left', class: 'muted' }, `It leaves in the world: ${plan.left.map((l) => `${l.resources} (${l.why})`).join('; ')}.`) : null;
      const notes = [plan.undecided && el('p', { id: 'cleanup-undecided', class: 'muted' },
        `No cleanup yet: decide ${plan.undecided} first (the game may or may not have applied it).`), left];
      if (dialog.open) cleanup.replaceChildren(...notes.filter(Boolean));
      if (!plan.cleans_up || !dialog.open) return;
      box = el('input', { type: 'checkbox', id: 'ask-cleanup', checked: true });
      cleanup.replaceChildren(
        el('p', {}, box, ' ', el('label', { for: 'ask-cleanup' }, 'Clean up what this run left')),
        el('div', { id: 'cleanup-plan' },
          el('p', {}, plan.reverts.length ? 'It reverts, newest first:' : 'Nothing is live yet.',
            plan.in_flight ? ` ${plan.in_flight} step(s) in flight may add to it.` : ''),
          el('ol', {}, plan.reverts.map((r) => el('li', { 'data-plan': named(r) }, `${named(r)} (${revertWords(r)})`)))));
      if (left) cleanup.append(left);
    }, () => {}); // no plan: the plain cancel is still offered
  });
}
