// @ts-check
// A phase in words: when it ends (its condition and time limit, from GET /runs/{id} `phases`), its
// deadline while it is open or held, and, once it has ended, how. Read from the phase row's fields;
// a condition this console does not know reads as its `when`.

import { clock } from './ui.js';

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

function whenItEnds(phase) {
  const condition = phase.condition || {};
  if (phase.signal) return `ends on the signal ${phase.signal}`;
  switch (condition.when) {
    case undefined: case 'steps_done': return 'ends when its steps are done';
    case 'manual': return 'waits for a person';
    case 'after': return `ends after ${duration(condition.seconds ?? phase.limit_seconds)}`;
    default: return `ends when: ${condition.when}`;
  }
}

// What the phase does at its time limit, the row's on_deadline: `close` as authored `advance`.
function atTheLimit(phase) {
  return phase.on_deadline === 'pause' ? 'pause' : 'advance';
}

// The phase's rule: "ends on the signal boss_defeated · at most 30 min, then pause". Nothing for the ending.
export function conditionWords(phase) {
  if (phase.kind === 'ending') return [];
  const words = [whenItEnds(phase)];
  if (phase.limit_seconds && phase.condition?.when !== 'after') {
    words.push(`at most ${duration(phase.limit_seconds)}, then ${atTheLimit(phase)}`);
  }
  return words;
}

// Where the phase stands: its deadline while the run is at it (`current`), or how it ended.
// `signalled`: its signal has been received (the run log has its row), so its condition was met by the
// signal rather than by a person's advance (the phase row says who, not which). Strings and <time> elements.
export function standingWords(phase, { current, signalled }) {
  if (signalled && phase.condition_met && phase.met_at && phase.closed_by !== 'timeout') { // closed by it (its open steps cancelled), or left at once (its steps were done)
    const from = `the signal ${phase.signal} from ${phase.met_by}`;
    return current && !phase.closed_at ? [`${from} came at `, clock(phase.met_at)] : [`closed by ${from} at `, clock(phase.met_at)];
  }
  if (phase.closed_at) {
    switch (phase.closed_by) {
      case 'after': return [`lasted its ${duration(phase.limit_seconds)}`, ' (closed at ', clock(phase.closed_at), ')'];
      case 'timeout': return [`timed out after ${duration(phase.limit_seconds)}`, ' (closed at ', clock(phase.closed_at), ')'];
      case 'advance': return [`advanced by ${phase.met_by || 'a person'} at `, clock(phase.met_at || phase.closed_at)];
      default: return [`closed (${phase.closed_by}) at `, clock(phase.closed_at)];
    }
  }
  if (phase.condition_met && phase.met_at && phase.condition) return [`advanced by ${phase.met_by} at `, clock(phase.met_at)];
  if (current && phase.deadline) {
    return [phase.on_deadline === 'pause' ? 'pauses the run at ' : 'ends at ', clock(phase.deadline)];
  }
  return [];
}

// What a signal's first receipt did (the route's and the log's `effect`), as a short phrase.
export function effectWords(effect, named) {
  switch (effect) {
    case 'ends_phase': return `ends ${named}`;
    case 'kept_for_phase': return `kept: ${named} ends as soon as it opens`;
    case 'phase_over': return `${named} had ended already, so nothing changed`;
    case 'acts_on_resume': return `ends ${named} once the run is resumed`;
    default: return String(effect);
  }
}
