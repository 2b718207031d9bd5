// @ts-check
// Pause, resume or cancel the runs selected on the list, with one reason: each run its own request (each
// control still guarded by the API on its own), then one summary of what took and what did not.

import { ApiError, post } from './api.js';
import { ask, capitalised, controlOf, el, notice } from './ui.js';

const BULK = ['pause', 'resume', 'cancel'];

// The bulk controls this person's roles may press (each control's declared `roles`).
export function bulkControls(session) {
  return BULK.filter((name) => {
    const declared = controlOf(name);
    return declared ? (declared.roles || []).some((role) => session.roles.includes(role)) : session.may.control;
  });
}

async function sendEach(name, ids, body) {
  const took = [];
  const refused = [];
  for (const id of ids) {
    try {
      await post(`/runs/${id}/${name}`, body);
      took.push(id);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) throw error;
      refused.push({ id, why: error instanceof ApiError ? error.messages.join(' ') : String(error) });
    }
  }
  return { took, refused };
}

// Asks once, sends one request per run, and says what happened; resolves when all are answered.
export async function bulkAct(name, ids) {
  const declared = controlOf(name);
  const label = declared?.label || name;
  const field = declared?.question ? declared.note_field : null;
  const runs = ids.map((id) => `run ${id}`).join(', ');
  const what = name === 'cancel'
    ? `Each of ${runs} stops for good: its open steps are cancelled, no later phase begins, and it cannot be resumed.`
    : `${capitalised(label)} is sent to ${runs}, one request each; a run that has moved meanwhile refuses and is listed.`;
  const text = await ask({
    title: `${label} ${ids.length} ${ids.length === 1 ? 'run' : 'runs'}?`,
    label: field ? `${capitalised(field)} (optional), the same for each` : null,
    action: `${label} ${ids.length}`, what,
  });
  if (text === null) return false;
  const { took, refused } = await sendEach(name, ids, text && field ? { [field]: text } : {});
  const done = took.length ? `${declared?.done || name}: ${took.map((id) => `run ${id}`).join(', ')}.` : `Nothing took.`;
  notice(`${done}${refused.length ? ` Not done (${refused.length}):` : ''}`, refused.length ? 'warning' : 'ok',
    refused.length ? el('ul', { id: 'bulk-refused' }, refused.map(({ id, why }) => el('li', { 'data-run': id }, `run ${id}: ${why}`))) : '');
  return true;
}

export function bulkBar(session, selected, after) {
  const names = bulkControls(session);
  if (!names.length) return null;
  const count = el('span', { id: 'bulk-count', 'aria-live': 'polite' });
  const buttons = names.map((name) => el('button', {
    type: 'button', 'data-bulk': name, class: controlOf(name)?.tone || null,
    onclick: async () => { if (selected.size && await bulkAct(name, [...selected])) after(); },
  }, controlOf(name)?.label || name)); // read after the count: "2 selected: Pause run"
  const bar = el('div', { class: 'buttons bulk', id: 'bulk-bar', role: 'group', 'aria-label': 'Selected runs' }, count, buttons);
  return {
    node: bar,
    refresh() {
      count.textContent = selected.size ? `${selected.size} selected:` : 'Select runs to act on several at once.';
      for (const button of buttons) /** @type {HTMLButtonElement} */ (button).disabled = !selected.size;
    },
  };
}
