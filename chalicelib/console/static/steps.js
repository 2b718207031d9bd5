// @ts-check
// A run's phases and their steps as the page lists them: per step its name, state (with how long a cue has
// waited and when the next attempt goes), every attempt (from the log's dispatch rows, expandable), and its
// note or error — a note, reason or cause shown as what it is, red only when it is an error.

import { attemptWords } from './log.js';
import { stepName, wordsBeyondName } from './names.js';
import { conditionWords, standingWords } from './phases.js';
import { deadlineMoved } from './plans.js';
import { badge, capitalised, el, inFuture, isOpenStep, isTerminalRun, parkOf, since, table, waitOf, when } from './ui.js';

// Words and <time> elements as a sentence: its first word capitalised.
function sentence(parts) {
  const flat = parts.flat(Infinity).filter((part) => part !== '');
  const [first, ...rest] = flat;
  return typeof first === 'string' ? [capitalised(first), ...rest] : flat;
}

// A step waiting to be tried again: open, neither in flight (no lease) nor parked, tried before, due later.
export const retrying = (step) => isOpenStep(step) && !step.parked && !step.claim_expires_at && step.attempts > 0 && Boolean(step.due_at);

// What the log says of each step: its dispatch rows, and its last status row (who or what moved it last).
export function stepHistory(entries) {
  const dispatches = new Map();
  const moved = new Map();
  let cancel = null; // the person's cancel of the run (its run.status row), which closes its open steps unlogged
  for (const entry of entries) {
    if (entry.kind === 'step.dispatch') {
      if (!dispatches.has(entry.step_id)) dispatches.set(entry.step_id, []);
      dispatches.get(entry.step_id).push(entry);
    }
    if (entry.kind === 'step.status') moved.set(entry.step_id, entry.detail || {});
    if (entry.kind === 'run.status' && entry.detail?.control === 'cancel') cancel = entry;
  }
  return {
    dispatches: (step) => dispatches.get(step.id) || [],
    moved: (step) => moved.get(step.id) || {},
    // Why a cancelled step no row of its own moved was cancelled: "the run was cancelled by mod-mia: “called off”",
    // when the run's cancel closed it (at that moment or before it was claimed again); null otherwise.
    // (a step over with no row of its own: only the run's cancel closes one so)
    cancelledWithRun: (step) => (!isOpenStep(step) && !moved.has(step.id) && cancel && step.finished_at
      && Date.parse(step.finished_at) >= Date.parse(cancel.created_at)
      ? `the run was cancelled by ${cancel.actor}${cancel.detail.reason ? `: “${cancel.detail.reason}”` : ''}` : null),
  };
}

// A step's last_error is an error when the game's last answer said it (its last dispatch's error) or the step
// waits to be tried again; otherwise it is a person's note or reason, or the engine's cause (a cancelled step's).
export function stepErrs(step, history) {
  const answers = history.dispatches(step);
  return retrying(step) || (Boolean(step.last_error) && answers[answers.length - 1]?.detail?.error === step.last_error);
}

function said(step, history) {
  // A parked cue's last_error is the engine's note of its instruction, which the step's own cell shows; a step
  // the run's cancel closed keeps that old note, so its cause is the cancel.
  const cancelled = history.cancelledWithRun(step);
  if (cancelled) return el('span', { class: 'note-text', 'data-said': 'note' }, 'Why: ', cancelled);
  if (!step.last_error || step.parked) return '';
  if (stepErrs(step, history)) return el('span', { class: 'error-text', 'data-said': 'error' }, 'Error: ', step.last_error);
  const moved = history.moved(step);
  const word = moved.control ? (moved.reason ? 'Reason' : 'Note') : 'Why';
  return el('span', { class: 'note-text', 'data-said': 'note' }, `${word}: `, step.last_error);
}

// The answer a cue with choices was given: its label as its button said it, and its value.
export function answerOf(step) {
  if (step.choice == null) return null;
  const label = (step.params?.choices || []).find((c) => c.value === step.choice)?.label;
  return el('div', { class: 'answer', 'data-answer': step.id }, 'Answer: ', el('strong', {}, label || step.choice),
    label && label !== step.choice ? ` (${step.choice})` : '');
}

function describeStep(step) {
  const words = wordsBeyondName(step);
  return [words ? [el('strong', {}, stepName(step)), el('br'), words] : el('strong', {}, stepName(step)), answerOf(step)];
}

// Its badge, and a line on what it waits for: a parked cue for how long; a retry which attempt of its allowance
// (the ceiling counts those since a person last retried or resent it), when, and what the last answer was.
function state(step, maxAttempts) {
  if (step.parked) {
    return [badge('parked', parkOf(step)?.label), step.started_at ? el('div', { class: 'muted' }, 'for ', since(step.started_at)) : ''];
  }
  if (retrying(step)) {
    // The attempt as the game will see it (attempts only rise); its place in the allowance beside it.
    const of = maxAttempts ? ` of ${maxAttempts}` : '';
    const place = step.attempts - (step.attempts_allowed_from || 0) + 1;
    const allowance = step.attempts_allowed_from ? ` (${place}${of} since a person sent it again)` : of;
    return [badge(step.status), el('div', { 'data-retry': step.id },
      `attempt ${step.attempts + 1}${allowance}, next in `, inFuture(step.due_at),
      step.last_error ? `, after: ${step.last_error}` : '')];
  }
  return badge(step.status);
}

function attempts(step, dispatches) {
  if (!dispatches.length) return String(step.attempts);
  return el('details', { 'data-attempts': step.id, id: `attempts-${step.id}` },
    el('summary', {}, `${step.attempts} (${dispatches.length} sent)`),
    el('ol', { class: 'attempts' }, dispatches.map((row) => el('li', {}, when(row.created_at), ' ', attemptWords(row.detail || {})))));
}

// A phase of more steps than this shows that many at a time (a window), with a pager: a page drawing every row of a
// run of thousands of steps, on each change, kept the browser busy for seconds at a time (docs/console.md).
export const STEPS_SHOWN = 200;

// Where the run stands in a phase's steps (sorted by seq): the current phase of a paused run at the last step it
// started, else at the first open step, else (all over) at the last.
function standingIndex(detail, number, ofPhase) {
  const started = ofPhase.map((s) => Boolean(s.started_at)).lastIndexOf(true);
  const stopped = number === detail.run.current_phase && waitOf(detail.waiting)?.on === 'run' && started >= 0;
  const open = ofPhase.findIndex(isOpenStep);
  return stopped ? started : open >= 0 ? open : ofPhase.length - 1;
}

// The STEPS_SHOWN rows in a row a long phase shows, from `start` (a multiple of STEPS_SHOWN): where the person
// moved them (`chosen`, kept until they go back), else the ones holding the step the run stands at.
function windowOf(detail, number, ofPhase, chosen) {
  const last = Math.floor((ofPhase.length - 1) / STEPS_SHOWN) * STEPS_SHOWN;
  const standing = Math.floor(Math.max(0, standingIndex(detail, number, ofPhase)) / STEPS_SHOWN) * STEPS_SHOWN;
  const start = chosen == null ? standing : Math.min(Math.max(0, chosen), last);
  return { start, end: Math.min(start + STEPS_SHOWN, ofPhase.length), last, standing };
}

// The pager of a long phase's steps: which it shows of how many, and buttons to the others.
function stepPager(number, total, { start, end, last, standing }, move) {
  const go = (label, to, what) => el('button', {
    type: 'button', class: 'secondary', 'data-steps-to': what, 'data-phase': number, disabled: to === start, // whose pager: focus kept
    onclick: () => move(number, to === standing ? null : to),
  }, label);
  return el('nav', { class: 'buttons step-pager', 'data-step-pager': number, 'aria-label': `Steps of phase ${number}: pages` },
    el('span', { 'data-steps-shown': number, tabindex: '-1' }, `Steps ${start + 1}–${end} of ${total}`), ' ',
    go('First', 0, 'first'), go('Earlier', Math.max(0, start - STEPS_SHOWN), 'earlier'),
    go('Later', Math.min(last, start + STEPS_SHOWN), 'later'), go('Last', last, 'last'),
    go('Where it stands', standing, 'standing'));
}

// `view`: {detail, entries, maxAttempts, signalled(name), controls(step), extend(phase), window(number): the
// start the person moved a long phase's rows to (null: where the run stands), moveWindow(number, start|null)}
// from the run's page.
export function phaseSections(view) {
  const { run, steps } = view.detail;
  const history = stepHistory(view.entries);
  // A phase passed over (its only_if not met) never opens: its log row says why.
  const passedOver = new Map(view.entries.filter((e) => e.kind === 'run.phase_skipped').map((e) => [e.detail?.phase, e.detail?.cause]));
  const byPhase = new Map();
  for (const step of steps) {
    if (!byPhase.has(step.phase)) byPhase.set(step.phase, []);
    byPhase.get(step.phase).push(step);
  }
  // The run's phases as the API lists them; a phase with steps but no row (a run started
  // before phase rows existed) is still shown, by its number.
  const listed = new Map(view.detail.phases.map((p) => [p.number, p]));
  for (const number of byPhase.keys()) if (!listed.has(number)) listed.set(number, { number, kind: null, name: null, state: null });
  const sections = [];
  for (const phase of [...listed.values()].sort((a, b) => a.number - b.number)) {
    const { number, name } = phase;
    const phaseSteps = byPhase.get(number) || [];
    const current = run.current_phase === number && !isTerminalRun(run.status);
    const head = el('h3', { 'data-phase': number, 'data-kind': phase.kind || '', 'data-state': phase.state || '' },
      `Phase ${number}${name ? `: ${name}` : ''}`, current ? ' (current)' : '');
    const words = [...conditionWords(phase), standingWords(phase, { current, signalled: view.signalled(phase.signal) })].filter((part) => part.length);
    const facts = words.length ? el('p', { class: 'phase-facts', 'data-phase-facts': number },
      sentence(words.flatMap((part, i) => [i ? ' · ' : '', part])), current ? deadlineMoved(phase) : [], '.',
      current ? view.extend(phase) : null) : null;
    if (!phaseSteps.length) {
      const why = passedOver.get(number);
      sections.push(el('section', { class: 'phase' }, head, facts, why
        ? el('p', { class: 'muted', 'data-passed-over': number }, `Passed over: ${why}.`)
        : el('p', { class: 'muted' }, 'Not started.')));
      continue;
    }
    const sorted = phaseSteps.sort((a, b) => a.seq - b.seq);
    const window = windowOf(view.detail, number, sorted, view.window(number));
    const pager = sorted.length > STEPS_SHOWN ? stepPager(number, sorted.length, window, view.moveWindow) : null;
    const rows = sorted.slice(window.start, window.end).map((step) => el('tr', { 'data-step-row': step.id, 'data-status': step.parked ? 'parked' : step.status },
      el('td', {}, String(step.seq + 1)), // counted from 1 for people
      el('td', {}, describeStep(step)),
      el('td', {}, state(step, view.maxAttempts)),
      el('td', {}, attempts(step, history.dispatches(step))),
      el('td', {}, when(step.due_at)),
      el('td', {}, said(step, history)),
      el('td', {}, el('details', { id: `step-facts-${step.id}` }, el('summary', {}, 'show'),
        el('dl', { class: 'facts' }, el('dt', {}, 'Step id'), el('dd', {}, String(step.id)),
          el('dt', {}, 'Idempotency key'), el('dd', {}, el('code', {}, step.idempotency_key))))),
      el('td', {}, el('div', { class: 'buttons' }, view.controls(step)))));
    sections.push(el('section', { class: 'phase' }, head, facts, pager,
      table(`Steps of phase ${number}`, ['#', 'Step', 'Status', 'Attempts', 'Due', 'Note or error', 'Details', 'Controls'], rows)));
  }
  if (!sections.length) sections.push(el('p', { class: 'muted' }, 'Its phases are listed once the run starts.'));
  return sections;
}

// "Phase 1 of 3 · step 4 of 4" and a bar: closed phases, plus the current one's finished steps, of all.
export function progress(detail) {
  const { run, steps } = detail;
  // The authored phases (the ending's among them): a cleanup's phase is the engine's, never counted as one.
  const phases = detail.phases.filter((p) => p.kind !== 'cleanup');
  if (!phases.length || run.current_phase == null) return [];
  const ofPhase = steps.filter((s) => s.phase === run.current_phase).sort((a, b) => a.seq - b.seq);
  const at = standingIndex(detail, run.current_phase, ofPhase);
  const closed = phases.filter((p) => p.closed_at).length;
  // What is done: a completed run's whole bar; any other's the closed phases and the steps before the one it
  // stands at (a finished run's, where it stopped).
  const done = run.status === 'completed';
  const current = !ofPhase.length ? 0 : Math.max(0, at) / ofPhase.length;
  const share = done ? 1 : Math.min(1, (closed + current) / phases.length);
  const words = done ? `All ${phases.length} ${phases.length === 1 ? 'phase' : 'phases'} done`
    : `Phase ${run.current_phase} of ${phases.length}${ofPhase.length ? ` · step ${at + 1} of ${ofPhase.length}` : ''}`;
  return [el('span', { id: 'run-progress-words' }, words), ' ',
    el('progress', { id: 'run-progress-bar', max: '100', value: String(Math.round(share * 100)), 'aria-label': `Progress: ${words}` })];
}
