// Rehearsal's projected timeline beside a document being edited: half a second after the last edit, the
// edited document goes to POST /definitions/{id}/rehearse (which stores nothing), and its steps with their
// earliest offsets, each phase's earliest and latest end, the shortest and longest run and the warnings
// are shown, and what each answer of a cue with choices (or value of a signal) runs and skips. Only the newest
// answer is shown: one that arrives after a later edit's is dropped. A document rehearsal refuses says its problems
// as the editor's Problems list says them, in words (never a raw JSON path), and points to that list.

import { ApiError, post } from './api.js';
import { el, fill } from './ui.js';

const DEBOUNCE_MS = 500;
const WAITS = { person: 'waits for a person', game: 'waits for the game', time: 'waits' };

function duration(seconds) {
  if (seconds === null || seconds === undefined) return 'no limit';
  const parts = [[Math.floor(seconds / 86400), 'd'], [Math.floor((seconds % 86400) / 3600), 'h'],
    [Math.floor((seconds % 3600) / 60), 'min'], [seconds % 60, 's']].filter(([n]) => n > 0);
  return parts.length ? parts.map(([n, unit]) => `${n} ${unit}`).join(' ') : '0 s';
}

function stepLine(step) {
  const waits = step.waits_for ? ` — ${WAITS[step.waits_for]}${step.timeout_seconds !== null ? ` (${duration(step.timeout_seconds)})` : ''}` : '';
  return el('li', { 'data-phase': step.phase, 'data-seq': step.seq },
    el('span', { class: 'offset' }, `+${duration(step.earliest_offset_seconds)}`), ' ',
    el('code', {}, step.action), step.says ? [' “', step.says, '”'] : '', waits);
}

// "phase 3" or "phase 1 · step 2": a gated phase or step, as a branch lists it.
const gatedName = (where) => (where.seq == null ? `phase ${where.phase}` : `phase ${where.phase} · step ${where.seq}`);
const named = (list) => (list.length ? list.map(gatedName).join(', ') : 'nothing');

// "If cue arena is answered North arena: runs phase 2; skips phase 3, phase 5 · step 1."
function branchLines(branches) {
  if (!branches?.length) return null;
  return el('ul', { id: 'timeline-branches' }, branches.flatMap((branch) => {
    const reads = branch.reads.cue ? `cue ${branch.reads.cue}` : `signal ${branch.reads.signal}'s ${branch.reads.field}`;
    return branch.answers.map((answer) => el('li', { 'data-branch': branch.reads.cue || `${branch.reads.signal}.${branch.reads.field}`, 'data-answer': String(answer.value) },
      answer.value === null ? `Otherwise, for ${reads} (${answer.label})` : `If ${reads} is ${answer.label}`,
      `: runs ${named(answer.runs)}; skips ${named(answer.skips)}.`));
  }));
}

function render(box, projection) {
  const byPhase = projection.phases.map((phase) => el('li', { 'data-timeline-phase': phase.number },
    el('strong', {}, `Phase ${phase.number} (${phase.name})`),
    ` ${phase.advance}: from +${duration(phase.earliest_start_seconds)} to +${duration(phase.earliest_end_seconds)} at the`
      + ` earliest, ${phase.latest_end_seconds === null ? 'no limit' : `+${duration(phase.latest_end_seconds)}`} at the latest`,
    el('ol', { class: 'timeline-steps' }, projection.steps.filter((s) => s.phase === phase.number).map(stepLine))));
  fill(box,
    el('p', { id: 'timeline-length' }, `Shortest ${duration(projection.shortest_seconds)}; longest ${duration(projection.longest_seconds)}.`),
    projection.warnings.length
      ? el('ul', { id: 'timeline-warnings', class: 'problems' }, projection.warnings.map((w) => el('li', { 'data-code': w.code }, w.message)))
      : el('p', { id: 'timeline-warnings', class: 'muted' }, 'No warnings.'),
    branchLines(projection.branches),
    el('ol', { id: 'timeline-phases', class: 'timeline' }, byPhase));
}

// The panel beside `editor` (editor.js), rehearsing against definition `definitionId`: drawn now for `initial`, and after
// each edit (its `documentchange` event, from the form or the JSON tab). `inWords(message)`: the editor's words for an
// API problem ("Phase 1 · step 2 (core.wait) · Wait (seconds) must be …").
export function timelinePanel(definitionId, editor, initial, inWords = (message) => message) {
  const box = el('div', { id: 'timeline-body' }, el('p', { class: 'muted' }, 'Projecting…'));
  const panel = el('section', { id: 'timeline', class: 'timeline-box', 'aria-labelledby': 'timeline-title', 'aria-live': 'polite' },
    el('h2', { id: 'timeline-title' }, 'Projected timeline'), box);
  let latest = 0;
  let timer = null;
  const project = async ({ document, problem }) => {
    const asked = ++latest;
    if (document === null) {
      box.replaceChildren(el('p', { id: 'timeline-problem' }, `Waiting for valid JSON: ${problem}`));
      return;
    }
    try {
      const projection = await post(`/definitions/${definitionId}/rehearse`, { document });
      if (asked === latest) render(box, projection);
    } catch (error) {
      if (asked !== latest || !(error instanceof ApiError) || error.status === 401) return;
      const count = error.messages.length;
      box.replaceChildren(el('div', { id: 'timeline-problem' },
        el('p', {}, `No timeline until the document is valid: it has ${count === 1 ? 'a problem' : `${count} problems`},`
          + ` which Save lists under Problems, each at its field:`),
        el('ul', { class: 'problems' }, error.messages.map((message) => el('li', {}, inWords(message))))));
    }
  };
  editor.addEventListener('documentchange', (event) => {
    clearTimeout(timer);
    timer = setTimeout(() => project(/** @type {CustomEvent} */ (event).detail), DEBOUNCE_MS);
  });
  project({ document: initial, problem: null });
  return panel;
}
