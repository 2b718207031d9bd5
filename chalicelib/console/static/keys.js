// @ts-check
// Keyboard shortcuts, each a single key pressed outside a text field; `?` lists them in a dialog, which also turns them
// off (WCAG 2.1.4): a speech-input user's dictated words, or a hardware keyboard bumped on a tablet, would otherwise
// take a game master away from a live run. The choice is this browser's (localStorage: a new tab, as a chat message's
// link opens, keeps it), and the page's footer opens the same dialog, so shortcuts turned off can be turned on again.

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

const OFF_KEY = 'events.console.shortcuts-off';
const turnedOff = () => {
  try {
    return localStorage.getItem(OFF_KEY) === '1';
  } catch {
    return false; // storage refused (a private window's settings): shortcuts on, as by default
  }
};
const turn = (on) => {
  try {
    if (on) localStorage.removeItem(OFF_KEY); else localStorage.setItem(OFF_KEY, '1');
  } catch {
    // not kept: the choice lasts as long as the page
  }
  offNow = !on;
};
let offNow = turnedOff();
window.addEventListener('storage', () => { offNow = turnedOff(); }); // turned off or on in another tab

function help() {
  if (document.getElementById('shortcuts')) return;
  const state = el('p', { id: 'shortcuts-state' });
  const said = () => {
    state.textContent = offNow ? 'Single-key shortcuts are off: keys do nothing outside a text field.'
      : 'Single-key shortcuts are on outside a text field.';
  };
  const box = /** @type {HTMLInputElement} */ (el('input', {
    type: 'checkbox', id: 'shortcuts-on', checked: !offNow, onchange: () => { turn(box.checked); said(); },
  }));
  said();
  const dialog = el('dialog', { class: 'help', id: 'shortcuts', 'aria-labelledby': 'shortcuts-title', 'aria-describedby': 'shortcuts-state' },
    el('h2', { id: 'shortcuts-title' }, 'Keyboard shortcuts'),
    el('dl', { class: 'facts' }, SHORTCUTS.map(([key, what]) => [el('dt', {}, el('kbd', {}, key)), el('dd', {}, what)])),
    el('label', { class: 'choice', for: 'shortcuts-on' }, box, ' Use single-key shortcuts (in this browser)'),
    state,
    el('div', { class: 'buttons' }, el('button', { type: 'button', id: 'shortcuts-close', onclick: () => close() }, 'Close')));
  const close = () => { dialog.close(); dialog.remove(); };
  dialog.addEventListener('cancel', (event) => { event.preventDefault(); close(); });
  document.body.append(dialog);
  dialog.showModal();
  /** @type {HTMLElement} */ (dialog.querySelector('#shortcuts-close')).focus();
}

// `active()`: whether shortcuts apply now (someone is signed in).
export function listenForShortcuts(active) {
  document.getElementById('shortcuts-open')?.addEventListener('click', () => help());
  document.addEventListener('keydown', (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    if (offNow || event.ctrlKey || event.metaKey || event.altKey || !active() || document.querySelector('dialog[open]')) return;
    if (target.closest('input, textarea, select, [contenteditable]')) return;
    const shortcut = SHORTCUTS.find(([key]) => key === event.key);
    if (!shortcut) return;
    event.preventDefault();
    shortcut[2]();
  });
}
