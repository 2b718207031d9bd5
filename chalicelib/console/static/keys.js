// @ts-check
// Keyboard shortcuts, each a single key pressed outside a text field; `?` lists them in a dialog.

import { el } from './ui.js';

/** @type {Array<[string, string, () => void]>} */
const SHORTCUTS = [
  ['?', 'Show these shortcuts', () => help()],
  ['r', 'Go to the runs list', () => { location.hash = '#/runs'; }],
  ['n', 'The runs that need someone', () => { location.hash = '#/runs?waiting=any'; }],
  ['/', 'Search the runs (on the runs list)', () => document.getElementById('filter-search')?.focus()],
  ['l', 'Go to the log (on a run)', () => document.getElementById('log-box')?.focus()],
  ['c', "Go to the run's controls (on a run)", () => /** @type {HTMLElement} */ (document.querySelector('#run-banners button, #run-controls button'))?.focus()],
];

function help() {
  if (document.getElementById('shortcuts')) return;
  const dialog = el('dialog', { class: 'help', id: 'shortcuts', 'aria-labelledby': 'shortcuts-title' },
    el('h2', { id: 'shortcuts-title' }, 'Keyboard shortcuts'),
    el('dl', { class: 'facts' }, SHORTCUTS.map(([key, what]) => [el('dt', {}, el('kbd', {}, key)), el('dd', {}, what)])),
    el('div', { class: 'buttons' }, el('button', { type: 'button', id: 'shortcuts-close', onclick: () => close() }, 'Close')));
  const close = () => { dialog.close(); dialog.remove(); };
  dialog.addEventListener('cancel', (event) => { event.preventDefault(); close(); });
  document.body.append(dialog);
  dialog.showModal();
  /** @type {HTMLElement} */ (dialog.querySelector('button')).focus();
}

// `active()`: whether shortcuts apply now (someone is signed in).
export function listenForShortcuts(active) {
  document.addEventListener('keydown', (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    if (event.ctrlKey || event.metaKey || event.altKey || !active() || document.querySelector('dialog[open]')) return;
    if (target.closest('input, textarea, select, [contenteditable]')) return;
    const shortcut = SHORTCUTS.find(([key]) => key === event.key);
    if (!shortcut) return;
    event.preventDefault();
    shortcut[2]();
  });
}
