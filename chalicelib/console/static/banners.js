// @ts-check
// The run page's banners: what the run waits for, told as a story — who and why and how long. "Paused by
// mod-mia 2 min ago: “boss bugged”", "Waiting for a game master for 12 min: Light the bonfire (gm-gus has
// it)", "Waiting for a game master for 3 min to revert npc crow-1: Shoo it by hand" (a cleanup's by-hand
// revert), "Holding until 20:15 (core.wait)", "Waiting for the game: … until 20:15 (times out in 4 min)".
// Notes and reasons read as what they are; a banner's words are red only for an error. A banner's buttons come
// straight after its story: what changes size on its own (the timers, an escalation fired) comes after them, so
// nothing slides them down under a thumb.

import { stepName } from './names.js';
import { capitalised, clock, el, inFuture, isOpenStep, isTerminalRun, labelOf, parkOf, since, waitOf } from './ui.js';

// The log row that put the run in `status` last (a run.status row): who, why and when. A cleanup a person
// began (a cancel with cleanup) ends the run on the engine's row: that person and their reason say why it ended.
export function lastMove(entries, status) {
  const moves = entries.filter((entry) => entry.kind === 'run.status');
  for (let i = moves.length - 1; i >= 0; i -= 1) {
    if (moves[i].detail?.to !== status) continue;
    const begun = moves[i].detail.control || !isTerminalRun(status) ? null : moves.slice(0, i).reverse()
      .find((entry) => entry.detail?.control && entry.detail.to === 'cleaning_up' && entry.detail.cleanup);
    const entry = begun || moves[i];
    const d = entry.detail;
    return { by: d.control ? entry.actor : null, why: d.reason || d.cause || null, at: entry.created_at };
  }
  return null;
}

// Asked before a Resume: someone else's reasoned pause (`move`: who, why and when, as lastMove reads it from the
// log or a paused run's waiting has it), for the person resuming over it to answer; null for their own or none.
export function pausedOver(move, sub) {
  return move?.by && move.by !== sub && move.why
    ? el('p', { id: 'ask-pause-reason' }, `${move.by} paused it `, since(move.at), ` ago: “${move.why}”. Resume over it?`) : null;
}

// ", until 20:15 (times out in 4 min)" for a wait with a time limit; nothing without one.
export function until(iso) {
  return iso ? [', until ', clock(iso), ' (times out in ', inFuture(iso), ')'] : [];
}

// "Paused by mod-mia 2 min ago: “boss bugged”" (or "Paused 2 min ago" for the engine, with its cause).
function told(word, move) {
  if (!move) return [word];
  return [word, move.by ? ` by ${move.by}` : '', ' ', since(move.at), ' ago',
    move.why ? [': ', move.by ? `“${move.why}”` : move.why] : ''];
}

// A parked cue's attention timers (each is when it is next due, or absent once spent or not set):
// " · reminded once · next reminder in 5 min · escalates in 10 min · times out in 30 min" (a dry run's cue:
// " · confirmed by the rehearsal in 8 s": the API says whose its `times_out_at` is, `times_out_by`).
function cueTimers(step) {
  const sent = step.reminders_sent || 0;
  const ends = step.times_out_by === 'rehearsal' ? ' · confirmed by the rehearsal in ' : ' · times out in ';
  return [
    sent ? ` · reminded ${sent === 1 ? 'once' : `${sent} times`}` : '',
    step.remind_at ? [' · next reminder in ', inFuture(step.remind_at)] : '',
    step.escalate_at ? [' · escalates in ', inFuture(step.escalate_at)] : '',
    step.times_out_at ? [ends, inFuture(step.times_out_at)] : '',
  ];
}

// A by-hand revert (a cleanup's parked core.cue) says what it undoes: " to revert npc crow-1", from the run's
// `waiting.resource`; nothing for a cue of a phase.
function reverting(step, cue) {
  if (step.resource_id == null) return '';
  return cue.resource ? [' to revert ', el('code', {}, `${cue.resource.kind} ${cue.resource.id}`)] : ' to revert what the run left';
}

// Who has a parked cue (named as the API names them: "Mira (Discord)", the run's `waiting`'s
// `acknowledged_by_named`), since when and until when: " (gm-gus has it since 20:14, until 20:29)"; or whose hold
// lapsed: " (gm-gus acknowledged at 20:14 and has not confirmed: nobody has it now)"; nothing for neither.
// `cue`: the run's `waiting` of the step with the step's own fields over it.
export const holderNamed = (cue) => cue.acknowledged_by_named || cue.acknowledged_by;

function holder(cue) {
  if (cue.acknowledged_by) {
    return [' (', el('span', { class: 'has-it', 'data-has-it': cue.acknowledged_by }, `${holderNamed(cue)} has it`,
      cue.acknowledged_at ? [' since ', clock(cue.acknowledged_at)] : '', cue.held_until ? [', until ', clock(cue.held_until)] : ''), ')'];
  }
  if (cue.lapsed_by) {
    return [' (', el('span', { class: 'has-it', 'data-lapsed': cue.lapsed_by }, `${cue.lapsed_by_named || cue.lapsed_by} acknowledged at `,
      clock(cue.lapsed_acknowledged_at), ' and has not confirmed: nobody has it now'), ')'];
  }
  return '';
}

// "Escalated to #staff 4 min ago, try 1 of 3": a wait's fired escalation (its `escalated`, told while the wait
// lasts), on the run's banner and its inbox row alike.
export function escalatedWords(escalated) {
  return ['Escalated', escalated.channel ? ` to ${escalated.channel}` : '', ' ', since(escalated.at), ' ago',
    escalated.attempt ? `, try ${escalated.attempt} of ${escalated.of}` : ''];
}

function escalation(wait, id) {
  return wait?.escalated ? el('p', { class: 'error-text', 'data-escalation': id }, escalatedWords(wait.escalated), '.') : null;
}

function banner(kind, attrs, ...children) {
  return el('div', { class: `banner banner-${kind}`, role: 'region', ...attrs }, ...children);
}

// A run delayed by a finished core.wait: its next open step not yet tried, due later, and the step before it a wait
// (the page words it "Holding until …").
function delayedByAWait(detail) {
  const { run, steps } = detail;
  const ofPhase = steps.filter((s) => s.phase === run.current_phase).sort((a, b) => a.seq - b.seq);
  const next = ofPhase.find(isOpenStep);
  if (!next?.due_at || next.attempts > 0 || next.parked || next.claim_expires_at || Date.parse(next.due_at) <= Date.now()) return null;
  const before = ofPhase.find((s) => s.seq === next.seq - 1);
  return before?.action_id === 'core.wait' ? { next, wait: before } : null;
}

// `view`: {detail, entries, offered(step), button(name, step, label?), currentPhase(), awaitedSignal(),
// signalButton(signal)} from the run's page. Returns the banners and the run controls they took over.
export function banners(view) {
  const { detail, entries } = view;
  const { run, steps, waiting } = detail;
  const parts = [];
  const taken = new Set();
  const wait = waitOf(waiting);
  if (wait?.on === 'run') { // paused: it waits for a resume
    const move = lastMove(entries, run.status);
    const failed = steps.filter((s) => view.offered(s).includes('retry'));
    const resume = failed.length && view.offered(null).includes('resume')
      ? view.button('resume', null, `Go on, leaving ${failed.length === 1 ? 'it' : 'them'} failed`) : null; // named just above
    if (resume) taken.add('resume');
    // A person's pause is theirs to explain, not an error: red only when the engine stopped the run.
    parts.push(banner(move?.by ? 'held' : 'stopped', { 'aria-label': capitalised(labelOf(run.status)), id: 'paused-banner' },
      el('p', { id: 'paused-story' }, el('strong', {}, told(capitalised(labelOf(run.status)), move)), '.'),
      failed.map((s) => el('p', { class: 'error-text' }, `${stepName(s)} failed: ${s.last_error || 'no reason given'}`)),
      failed.length ? el('div', { class: 'buttons' }, failed.map((s) => view.button('retry', s)), resume) : null,
      escalation(waiting, run.id)));
  }
  for (const step of steps.filter((s) => s.parked && parkOf(s)?.decision)) {
    // Its last attempt has no known outcome: a person says whether the game applied it (the API offers
    // confirm, skip and resend for it).
    const decision = wait?.decision && waiting.step_id === step.id ? waiting : {};
    const waited = decision.since || step.started_at;
    parts.push(banner('cue', { 'aria-label': `Decision, ${stepName(step)}`, 'data-decision': step.id },
      el('p', {}, el('strong', {}, `${stepName(step)} waits for a decision`, waited ? [' (for ', since(waited), ')'] : ''),
        ': the game may or may not have applied it.'),
      el('p', { class: 'muted' }, 'Confirm it if the game did, skip it, or resend it to the game.'),
      el('div', { class: 'buttons' }, view.offered(step).map((c) => view.button(c, step))),
      escalation(decision, step.id)));
  }
  for (const step of steps.filter((s) => s.parked && !parkOf(s)?.decision)) {
    const cue = wait?.on === 'step' && !wait.decision && waiting.step_id === step.id ? waiting : {};
    const waited = cue.since || step.started_at;
    const revert = step.resource_id != null;
    parts.push(banner('cue', { 'aria-label': `${revert ? 'Revert by hand' : 'Cue'}, ${stepName(step)}`, 'data-cue': step.id,
      'data-revert': revert ? (cue.resource ? `${cue.resource.kind} ${cue.resource.id}` : '') : null },
      el('p', {}, el('strong', {}, 'Waiting for a game master', waited ? [' for ', since(waited)] : '', reverting(step, cue), ': '),
        step.params?.instruction || step.action_id, holder({ ...cue, ...step })),
      // The rehearsal's confirm is no timeout to extend.
      el('div', { class: 'buttons' }, view.offered(step)
        .filter((c) => c !== 'retry' && !(c === 'extend_cue' && step.times_out_by === 'rehearsal'))
        .map((c) => view.button(c, step))),
      el('p', { class: 'muted', 'data-cue-timers': step.id }, stepName(step), cueTimers(step)),
      escalation(cue, step.id)));
  }
  // A run a person ended, or one that ended on a reason or an error, says who and why.
  const ended = isTerminalRun(run.status) ? lastMove(entries, run.status) : null;
  if (ended?.by || ended?.why || (isTerminalRun(run.status) && run.last_error)) {
    const failure = !ended?.by && Boolean(run.last_error); // the engine ended it on an error
    parts.push(banner(failure ? 'stopped' : 'ended', { 'aria-label': capitalised(labelOf(run.status)), id: 'ended-banner' },
      el('p', { class: failure ? 'error-text' : null }, el('strong', {}, told(capitalised(labelOf(run.status)), ended)),
        ended?.why || !run.last_error ? '.' : `: ${run.last_error}`)));
  }
  const delay = waiting ? null : delayedByAWait(detail);
  if (delay) {
    parts.push(banner('info', { 'aria-label': 'Holding', id: 'holding-banner' },
      el('p', {}, el('strong', {}, 'Holding until ', clock(delay.next.due_at), ` (${delay.wait.action_id})`),
        ', then ', stepName(delay.next), ' (in ', inFuture(delay.next.due_at), ').')));
  }
  if (wait?.on === 'phase' && !wait.by_the_game) { // held: it waits for a person to advance it
    const phase = view.currentPhase();
    parts.push(banner('cue', { 'aria-label': 'Waiting to advance', id: 'advance-banner' },
      el('p', {}, el('strong', {}, 'Waiting for a person', waiting.since ? [' for ', since(waiting.since)] : '', ': '),
        `${phase.named} is done; it ends when someone advances it`, until(waiting.until), '.'),
      escalation(waiting, run.id)));
  }
  const signal = view.awaitedSignal();
  if (signal) {
    parts.push(banner('cue', { 'aria-label': 'Waiting for the game', id: 'signal-banner', 'data-signal': signal.name },
      el('p', {}, el('strong', {}, 'Waiting for the game: '), `${capitalised(signal.named)} is waiting for the game's signal ${signal.name}`,
        until(signal.until), signal.held ? '; its steps are done.' : '; its steps go on meanwhile.'),
      view.signalButton(signal)));
  }
  return { parts, taken };
}
