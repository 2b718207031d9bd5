// @ts-check
// A phase in words: when it ends (its condition and time limit, from GET /runs/{id} `phases`), its
// deadline while it is open or held, and, once it has ended, how. Read from the phase row's fields,
// each word's phrase from the vocabulary (GET /vocabulary); a condition this console was not told of
// reads as its `when`.

import { clock, defaultWordOf, filled, wordOf, wordsOf } from './ui.js';

// 1200 → "20 min", 5400 → "1 h 30 min", 75 → "1 min 15 s".
export function duration(seconds) {
  /** @type {Array<[number, string]>} */
  const parts = [[Math.floor(seconds / 3600), 'h'], [Math.floor((seconds % 3600) / 60), 'min'], [seconds % 60, 's']];
  const said = parts.filter(([n]) => n > 0).map(([n, unit]) => `${n} ${unit}`);
  return said.length ? said.join(' ') : '0 s';
}

// A phase as the page names it in a sentence: "phase 2 (boss fight)".
export function phaseNamed(number, row) {
  return `phase ${number}${row?.name ? ` (${row.name})` : ''}`;
}

// The phase's condition as the vocabulary words it (none named: the default, its steps done).
function conditionOf(phase) {
  const when = phase.condition?.when;
  return when === undefined ? defaultWordOf('phase_conditions') : wordOf('phase_conditions', when);
}

function whenItEnds(phase) {
  const condition = conditionOf(phase);
  if (!condition) return `ends when: ${phase.condition?.when}`;
  return filled(condition.label, { seconds: duration(phase.condition?.seconds ?? phase.limit_seconds), signal: phase.signal });
}

// What the phase's time limit does, as authored (`on_timeout`: its word's `on_deadline` is the row's).
function timeoutOf(phase) {
  return wordsOf('on_timeout').find((word) => word.on_deadline === phase.on_deadline) || defaultWordOf('on_timeout');
}

// The phase's rule: "ends on the signal boss_defeated · at most 30 min, then pause". Nothing for the ending.
export function conditionWords(phase) {
  if (phase.kind === 'ending') return [];
  const words = [whenItEnds(phase)];
  if (phase.limit_seconds && !conditionOf(phase)?.ends_at_its_limit) {
    words.push(`at most ${duration(phase.limit_seconds)}, then ${timeoutOf(phase)?.label ?? phase.on_deadline}`);
  }
  return words;
}

// Where the phase stands: its deadline while the run is at it (`current`), or how it ended.
// `signalled`: its signal has been received (the run log has its row), so its condition was met by the
// signal rather than by a person's advance (the phase row says who, not which). Strings and <time> elements.
export function standingWords(phase, { current, signalled }) {
  const closedBy = wordOf('closed_by', phase.closed_by);
  if (signalled && phase.condition_met && phase.met_at && !closedBy?.by_deadline) { // closed by it (its open steps cancelled), or left at once (its steps were done)
    const from = `the signal ${phase.signal} from ${phase.met_by}`;
    return current && !phase.closed_at ? [`${from} came at `, clock(phase.met_at)] : [`closed by ${from} at `, clock(phase.met_at)];
  }
  if (phase.closed_at) {
    if (!closedBy) return [`closed (${phase.closed_by}) at `, clock(phase.closed_at)];
    const told = filled(closedBy.closed, { limit: duration(phase.limit_seconds), by: phase.met_by || 'a person' });
    // Its deadline closed it: when it closed; a person: when they advanced it; else when it closed.
    if (closedBy.by_deadline) return [told, ' (closed at ', clock(phase.closed_at), ')'];
    return [`${told} `, clock(closedBy.by_person ? phase.met_at || phase.closed_at : phase.closed_at)];
  }
  if (phase.condition_met && phase.met_at && phase.condition) return [`advanced by ${phase.met_by} at `, clock(phase.met_at)];
  if (current && phase.deadline) {
    return [`${timeoutOf(phase)?.at_deadline ?? phase.on_deadline} `, clock(phase.deadline)];
  }
  return [];
}

// What a signal's first receipt did (the route's and the log's `effect`), as a short phrase.
export function effectWords(effect, named) {
  const word = wordOf('signal_effects', effect);
  return word ? filled(word.label, { phase: named }) : String(effect);
}
