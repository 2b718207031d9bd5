// @ts-check
// What changed between two versions of a definition, computed here from their documents (GET
// /definitions/{id}/versions/{n}): the event's fields, phases and steps added, removed or changed, and each
// changed one field by field ("params.message: “…” → “…”"). Phases are matched by name, steps by content
// (the longest run of equal steps stays put); an unmatched old step and new step at the same place with the
// same action are one step changed, otherwise one removed and one added.

import { el, heading } from './ui.js';

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// A value as a person reads it: text in quotes, a list's items and an object's fields named, never as JSON.
function shown(value) {
  if (value === undefined) return '(not set)';
  if (Array.isArray(value)) return value.length ? `the list ${value.map(shown).join(', ')}` : 'an empty list';
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${k}: ${shown(v)}`).join(', ')}}`;
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

// Every leaf that differs, as [path, before, after]; arrays are compared whole; an object on one side only
// is compared field by field with nothing.
function fieldChanges(before, after, prefix = '') {
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (before === undefined && isObject(after)) return fieldChanges({}, after, prefix);
  if (after === undefined && isObject(before)) return fieldChanges(before, {}, prefix);
  if (!isObject(before) || !isObject(after)) return same(before, after) ? [] : [[prefix, before, after]];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return keys.flatMap((key) => fieldChanges(before[key], after[key], prefix ? `${prefix}.${key}` : key));
}

// The two lists aligned: [before, after] pairs, either side undefined for one only on the other side. Items
// `match` (the longest common run) stay paired; between them, leftovers are paired in order when `alike`.
function align(before, after, match, alike) {
  const lengths = Array.from({ length: before.length + 1 }, () => new Array(after.length + 1).fill(0));
  for (let i = before.length - 1; i >= 0; i -= 1) {
    for (let j = after.length - 1; j >= 0; j -= 1) {
      lengths[i][j] = match(before[i], after[j]) ? lengths[i + 1][j + 1] + 1 : Math.max(lengths[i + 1][j], lengths[i][j + 1]);
    }
  }
  const pairs = [];
  let removed = [];
  let added = [];
  const flush = () => {
    while (removed.length && added.length && alike(removed[0], added[0])) pairs.push([removed.shift(), added.shift()]);
    pairs.push(...removed.map((item) => [item, undefined]), ...added.map((item) => [undefined, item]));
    removed = [];
    added = [];
  };
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && match(before[i], after[j])) {
      flush();
      pairs.push([before[i++], after[j++]]);
    } else if (j >= after.length || (i < before.length && lengths[i + 1][j] >= lengths[i][j + 1])) {
      removed.push(before[i++]);
    } else {
      added.push(after[j++]);
    }
  }
  flush();
  return pairs;
}

function changeLine(kind, what, changes = []) {
  return el('li', { 'data-change': kind }, el('strong', {}, what), ` ${kind}`,
    changes.length ? el('ul', {}, changes.map(([path, before, after]) => el('li', { 'data-field': path },
      el('code', {}, path), `: ${shown(before)} → ${shown(after)}`))) : null);
}

// The lines for one list of steps (a phase's or the ending's), each named by its place in its own version
// ("Phase 2 · step 4 (world.spawn)", "Ending · step 1 (core.announce)").
function stepLines(before = [], after = [], placeBefore, placeAfter) {
  const indexed = (steps, place) => steps.map((step, seq) => ({ step, name: `${place} · step ${seq + 1} (${step.action})` }));
  return align(indexed(before, placeBefore), indexed(after, placeAfter), (a, b) => same(a.step, b.step), (a, b) => a.step.action === b.step.action)
    .flatMap(([old, now]) => {
      if (!old) return [changeLine('added', now.name, fieldChanges({}, now.step))];
      if (!now) return [changeLine('removed', old.name)];
      const changes = fieldChanges(old.step, now.step);
      return changes.length ? [changeLine('changed', now.name, changes)] : [];
    });
}

// What differs from document `before` to `after`, as list items (none: the same document).
function differences(before, after) {
  const { phases: oldPhases = [], ending: oldEnding, ...oldRest } = before;
  const { phases: newPhases = [], ending: newEnding, ...newRest } = after;
  const lines = [];
  const eventChanges = fieldChanges(oldRest, newRest);
  if (eventChanges.length) lines.push(changeLine('changed', 'The event', eventChanges));
  // A document's phase is numbered by its place in the document's list (as the programme walks it).
  const numbered = (phases) => phases.map((phase, index) => ({ phase, place: `Phase ${index + 1}` }));
  for (const [old, now] of align(numbered(oldPhases), numbered(newPhases), (a, b) => a.phase.name === b.phase.name, () => true)) {
    if (!old || !now) {
      const { phase, place } = old || now;
      lines.push(changeLine(old ? 'removed' : 'added', `${place} (${phase.name})`, old ? [] : fieldChanges({}, { ...phase, steps: undefined })));
      lines.push(...(old ? stepLines(phase.steps, [], place, place) : stepLines([], phase.steps, place, place)));
      continue;
    }
    const { steps: oldSteps, ...oldFields } = old.phase;
    const { steps: newSteps, ...newFields } = now.phase;
    const phaseChanges = fieldChanges(oldFields, newFields);
    if (phaseChanges.length) lines.push(changeLine('changed', `${now.place} (${now.phase.name})`, phaseChanges));
    lines.push(...stepLines(oldSteps, newSteps, old.place, now.place));
  }
  lines.push(...stepLines(oldEnding, newEnding, 'Ending', 'Ending'));
  return lines;
}

// The "Compare versions" section of a definition's page: two versions chosen, their differences shown
// (null while there is only one version).
export function versionsDiff(versionNumbers, loadVersion) {
  if (versionNumbers.length < 2) return null;
  const last = versionNumbers[versionNumbers.length - 1];
  const choose = (id, label, chosen) => [el('label', { for: id }, label),
    el('select', { id }, versionNumbers.map((n) => el('option', { value: String(n), selected: n === chosen }, `Version ${n}`)))];
  const result = el('div', { id: 'diff-result', 'aria-live': 'polite' });
  const form = el('form', {
    class: 'inline',
    onsubmit: async (event) => {
      event.preventDefault();
      const from = Number(/** @type {HTMLSelectElement} */ (form.querySelector('#diff-from')).value);
      const to = Number(/** @type {HTMLSelectElement} */ (form.querySelector('#diff-to')).value);
      result.replaceChildren(el('p', { class: 'muted' }, 'Comparing…'));
      try {
        const [before, after] = await Promise.all([loadVersion(from), loadVersion(to)]);
        const lines = differences(before, after);
        result.replaceChildren(heading(3, `From version ${from} to version ${to}`),
          lines.length ? el('ul', { class: 'diff', id: 'diff-lines' }, lines) : el('p', { id: 'diff-lines' }, 'The two documents are the same.'));
      } catch (error) {
        result.replaceChildren(el('p', { role: 'alert' }, `The versions could not be read: ${error.message}`));
      }
    },
  },
  choose('diff-from', 'From', versionNumbers[versionNumbers.length - 2]),
  choose('diff-to', 'To', last),
  el('button', { type: 'submit', id: 'diff-compare' }, 'Compare'));
  return el('section', { 'aria-labelledby': 'diff-title' }, el('h2', { id: 'diff-title' }, 'Compare versions'), form, result);
}
