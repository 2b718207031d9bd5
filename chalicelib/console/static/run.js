// @ts-check
// A run's page: its story (banners), progress, phases and steps, the live log, and exactly the controls the API offers.
//
// Controls come from GET /runs/{id} (`controls`): the API offers the signed-in person exactly the controls
// their roles may press now, and the page draws those and no others (it keeps no role rules of its own);
// nothing is guessed or greyed out. A refusal is explained: 409 as
// "this run has moved" with the page refreshed, 403 with the role it needs. A phase that waits for
// the game's signal says so, and staff may send that signal from the page (POST /runs/{id}/signals/{name}).

import { asApiError, get, getRun, pendingRetry } from './api.js';
import { banners, holderNamed, lastMove, pausedOver } from './banners.js';
import { logView } from './log.js';
import { namer, stepName } from './names.js';
import { Poller, freshness } from './poll.js';
import { choicesOf, pressAttrs, pressLabel, pressPath, presser, specOf } from './press.js';
import { effectWords, phaseNamed } from './phases.js';
import { moveBy, postpone } from './plans.js';
import { phaseSections, progress, stepErrs, stepHistory } from './steps.js';
import {
  ask, badge, controlOf, el, focus, heading, isLive, isOpenStep, isTerminalRun, keepPlace, labelOf, liveFrom, notice, pageTitle, parkOf, rehearsalMark, say, sayState, waitOf, when,
} from './ui.js';
import { ledgerSection } from './resources.js';

const LOG_PAGE = 500;

export function runView(main, ctx, runIdText) {
  const runId = Number(runIdText);
  const session = ctx.session();
  const title = heading(1, `Run ${runId}`, { id: 'run-title' });
  const summary = el('div', { id: 'run-summary' });
  const bannerBox = el('div', { id: 'run-banners' });
  // What the run now waits for, said to a screen reader when it changes (not the timers: they move every few seconds).
  const changed = el('p', { id: 'run-changed', class: 'visually-hidden', role: 'status' });
  const runControls = el('div', { id: 'run-controls', class: 'buttons' });
  const counts = el('p', { id: 'run-counts' });
  const phases = el('div', { id: 'run-phases' });
  const runProgress = el('p', { id: 'run-progress' });
  const rehearsal = el('p', { id: 'run-rehearsal' });
  const log = logView();
  const fresh = el('div', { id: 'freshness' });
  const ledger = ledgerSection(runId);
  main.replaceChildren(
    el('p', {}, el('a', { href: '#/runs' }, '← All runs')),
    title, rehearsal, runProgress, changed, bannerBox, runControls, summary, fresh,
    el('section', { 'aria-labelledby': 'steps-title' }, el('h2', { id: 'steps-title' }, 'Phases and steps'), counts, phases),
    ledger.element,
    el('section', { 'aria-labelledby': 'log-title' }, el('h2', { id: 'log-title' }, 'Log'), log.node),
  );

  const entries = []; // the whole log so far, oldest first
  const people = {}; // who the log's chat identities are, as the API names them: the `people` of every log page read
  let afterId = 0;
  let shown = '';
  let toldKey = null; // what the run waited for when the page last drew it (null: not drawn yet)
  let definitionName = null; // for the title; the phases name themselves (GET /runs/{id} `phases`)
  let detail = null;
  let loadFailed = false; // the last load failed, and #connection says so
  const signalsReceived = new Set(); // the names of the run.signal rows the log has shown
  const windows = new Map(); // a long phase's number -> the first of its rows the person moved to (steps.js)

  async function loadName(run) {
    if (definitionName !== null) return;
    try {
      const named = async (fresh) => (await ctx.definitions({ fresh })).find((d) => d.id === run.definition_id)?.name;
      definitionName = (await named(false)) || (await named(true)) || ''; // a definition newer than the sign-in's list
    } catch {
      definitionName = ''; // a nicety: the run is still shown
    }
  }

  // A control's button, its label short ("I have it": the banner or the step's row names the step once, the
  // button's accessible name adds it); on a cue with choices, a control that carries the answer (confirm) is a
  // button per choice, each its label.
  function controlButton(name, step, label = specOf(name).action) {
    const spec = specOf(name);
    const path = pressPath(runId, name, step?.id); // while a press of it is on its way: "Sending…", disabled
    const choices = choicesOf(name, step);
    if (choices.length) {
      return choices.map((choice) => el('button', {
        type: 'button', class: spec.tone, 'data-control': name, 'data-step': step.id, 'data-choice': choice.value,
        onclick: () => act(name, step, choice), ...pressAttrs(path, choice.label, `${spec.action} ${stepName(step)}: ${choice.label}`),
      }, pressLabel(path, choice.label)));
    }
    return el('button', {
      type: 'button', class: spec.tone, 'data-control': name, 'data-step': step ? step.id : null, onclick: () => act(name, step),
      ...pressAttrs(path, label, step ? `${label}, ${stepName(step)}` : null),
    }, pressLabel(path, label));
  }

  // The controls the API offers this person now, on the run or on `step`: exactly what the page draws.
  function offered(step) {
    if (!detail) return [];
    return step ? (detail.controls.steps[String(step.id)] || []) : detail.controls.run;
  }

  // The controls the API offers this person now on `phase`: those of the phase the run is at, none on another.
  const offeredOn = (phase) => (detail && phase.number === detail.run.current_phase ? detail.controls.phase : []);

  const runNamed = () => `run ${runId}${definitionName ? ` (${definitionName})` : ''}`;
  const { act, send, currentPhase, phaseRow } = presser({
    runId, detail: () => detail, offered, runNamed, session, refresh: () => poller.now(), landing: title,
    explain: (name) => ({ advance: advanceWords, resume: resumeWords, upgrade: upgradeWords }[name]?.() ?? null), moveTime,
  });

  // The signal the run's current phase waits for, if any: `waiting.for` signal once its steps are done
  // (`held`), or, while its steps still go on (nothing or a cue awaited), its row's signal not yet met.
  function awaitedSignal() {
    const { waiting, run } = detail;
    const wait = waitOf(waiting);
    if (wait?.on === 'phase' && wait.by_the_game) {
      return { name: waiting.signal, number: waiting.phase, named: phaseNamed(waiting.phase, phaseRow(waiting.phase)), until: waiting.until, held: true };
    }
    const row = phaseRow(run.current_phase);
    const cue = wait?.on === 'step' && !wait.decision; // a cue does not hold the phase: its signal may still come
    if ((waiting && !cue) || isTerminalRun(run.status) || !row?.signal || row.condition_met || row.closed_at) return null;
    return { name: row.signal, number: row.number, named: phaseNamed(row.number, row), until: row.deadline, held: false };
  }

  async function sendSignal(signal) {
    const confirmed = await ask({
      title: `Send the signal ${signal.name} to run ${runId}? It ends ${signal.named}, as if the game had sent it.`,
      action: 'Send signal',
    });
    if (confirmed === null) return;
    await send(`/runs/${runId}/signals/${encodeURIComponent(signal.name)}`, {}, {
      action: 'Send signal',
      done: (answer) => `Signal ${signal.name} received from ${answer.signal.by}: ${effectWords(answer.effect, signal.named)}.`,
    });
  }

  // What an Advance will do, before it is sent: each open step of the phase it ends, named, and what becomes
  // of it (a parked cue or decision and a pending step are skipped with the reason), a failed step that stays
  // failed, a signal no longer awaited, and a paused run resumed.
  function advanceWords() {
    const phase = currentPhase();
    const ofPhase = detail.steps.filter((s) => s.phase === phase.number);
    const skipped = ofPhase.filter(isOpenStep).map((s) => el('li', { 'data-skips': s.id }, `${stepName(s)}: `,
      s.parked ? (parkOf(s)?.decision ? 'waiting for a decision' : `a cue waiting for a game master${s.acknowledged_by ? ` (${holderNamed({ ...(detail.waiting?.step_id === s.id ? detail.waiting : {}), ...s })} has it)` : ''}`)
        : s.attempts ? 'to be tried again' : 'not begun yet', ', is skipped'));
    const failed = ofPhase.filter((s) => offered(s).includes('retry')).map(stepName);
    const signal = awaitedSignal();
    return [
      el('p', {}, skipped.length ? `Advancing ends ${phase.named} now; with your reason, it skips:` : `Advancing ends ${phase.named} now; it skips nothing: its steps are over.`),
      skipped.length ? el('ul', { id: 'advance-skips' }, skipped) : null,
      failed.length ? el('p', {}, `${failed.join(', ')} stays failed.`) : null,
      signal ? el('p', {}, `The signal ${signal.name} is no longer awaited.`) : null,
      el('p', {}, waitOf(detail.waiting)?.on === 'run' ? 'The run resumes with the next phase.' : 'The next phase begins.'),
    ];
  }

  // What an Upgrade changes: the version played at the run's time (the one this page shows current, which is the
  // one sent: a version saved since is refused, never played unseen).
  function upgradeWords() {
    const { run, current_version: current } = detail;
    return [el('p', {}, `It plays version ${current} instead of version ${run.definition_version}, at its time, `,
      when(run.scheduled_for), '.')];
  }

  // What a Resume goes over: a pause with a reason by someone else says who and why, for the note to answer;
  // a failed step it leaves failed.
  function resumeWords() {
    const move = lastMove(entries, detail.run.status);
    const failed = detail.steps.filter((s) => offered(s).includes('retry'));
    return [
      pausedOver(move, session.sub),
      failed.length ? el('p', {}, `The run goes on from the step after the failed one; ${failed.map(stepName).join(', ')} stays failed.`) : null,
    ].filter(Boolean);
  }

  // Beside the deadline of the phase the run is at, while the API offers to move it: the button that does.
  function extendButton(phase) {
    if (!offeredOn(phase).includes('extend')) return null;
    const named = phaseNamed(phase.number, phase);
    const path = `/runs/${runId}/phases/${phase.number}/extend`;
    return el('button', {
      type: 'button', class: 'small', 'data-control': 'extend', 'data-phase': phase.number,
      onclick: async () => { if (await moveBy({ path, named, deadline: phase.deadline })) await poller.now(); },
      // "Sending…" from the tap to the answer: a second tap opens nothing
      ...pressAttrs(path, specOf('extend').action, `${specOf('extend').action}, ${named}`),
    }, pressLabel(path, specOf('extend').action));
  }

  // A control that moves a time (postpone: a new time; a cue's extend: by some minutes) asks for it in its own dialog.
  async function moveTime(name, step) {
    const declared = controlOf(name);
    const moved = declared.time_field ? await postpone(detail.run, runNamed())
      : await moveBy({ path: `/runs/${runId}/steps/${step.id}/${name}`, named: stepName(step), deadline: step.times_out_at });
    if (moved) await poller.now();
  }

  const signalButton = (signal) => (session.may.control ? el('div', { class: 'buttons' }, el('button', {
    type: 'button', class: 'primary', id: 'send-signal', 'data-signal': signal.name, onclick: () => sendSignal(signal),
  }, `Send signal ${signal.name}`)) : null);

  // The run's last_error is an error when the engine stopped it (a failed step); a person's stop is their reason,
  // and a run a person ended (a cancel, with its cleanup or not) ended on their reason whatever failed before.
  function lastErrorFact(run) {
    if (!run.last_error) return null;
    const move = lastMove(entries, run.status);
    const history = stepHistory(entries);
    const failedStep = detail.steps.some((s) => stepErrs(s, history));
    if (move?.by && (!failedStep || isTerminalRun(run.status))) {
      return [el('dt', {}, 'Reason'), el('dd', { id: 'run-reason' }, run.last_error)];
    }
    return [el('dt', {}, 'Last error'), el('dd', { class: 'error-text', id: 'run-last-error' }, run.last_error)];
  }

  // A change of what the run waits for (its status, the wait, its step, an escalation, who has the cue), said once
  // in the status region: the first banner's words but its timers, or the run's status when no banner tells it.
  function sayChange(run, first) {
    const { waiting } = detail;
    const key = JSON.stringify([run.status, waiting?.for, waiting?.step_id, waiting?.escalated?.at, waiting?.acknowledged_by,
      waiting?.lapsed_by]);
    if (toldKey !== null && key !== toldKey) {
      changed.textContent = first ? [...first.querySelectorAll('p:not([data-cue-timers])')].map((p) => p.textContent).join(' ')
        : `Run ${run.id} is ${labelOf(run.status)}.`;
    }
    toldKey = key;
  }

  function render() {
    const putBack = keepPlace(main); // a keyboard user's focus and the details opened stay while the page is redrawn
    const { run, steps, counts: stepCounts } = detail;
    pageTitle(`Run ${run.id} (${run.status}) · Event runs`);
    title.textContent = `Run ${run.id}${definitionName ? `: ${definitionName}` : ''}`;
    rehearsal.replaceChildren(...(run.rehearsal ? [rehearsalMark(run),
      ` A dry run at ${run.rehearsal.speed}× speed, its module actions ${run.rehearsal.bridge === 'sandbox' ? 'sent to the sandbox' : 'simulated'}:`
      + ' nothing reaches the live game or the live channels.'] : []));
    summary.replaceChildren(el('dl', { class: 'facts' },
      el('dt', {}, 'Status'), el('dd', { id: 'run-status', 'data-status': run.status }, badge(run.status)),
      el('dt', {}, 'Health'), el('dd', {}, badge(run.health)),
      el('dt', {}, 'Definition'), el('dd', { id: 'run-definition' }, `${definitionName || `definition ${run.definition_id}`}, version ${run.definition_version}`
        + (detail.current_version > run.definition_version ? ` (version ${detail.current_version} is current)` : '')),
      el('dt', {}, 'Scheduled for'), el('dd', {}, when(run.scheduled_for)),
      el('dt', {}, 'Started'), el('dd', {}, when(run.started_at)),
      el('dt', {}, 'Finished'), el('dd', {}, when(run.finished_at)),
      lastErrorFact(run)));
    runProgress.replaceChildren(...progress(detail));
    const told = banners({
      detail, entries, offered, button: controlButton, currentPhase, awaitedSignal, signalButton,
    });
    bannerBox.replaceChildren(...told.parts);
    sayChange(run, told.parts[0]);
    // A finished run's Clean up is pressed where what it reverts is listed: on the ledger's section.
    const atLedger = new Set(['cleanup']);
    runControls.replaceChildren(...offered(null).filter((c) => !told.taken.has(c) && !atLedger.has(c)).map((c) => controlButton(c)));
    ledger.controls.replaceChildren(...offered(null).filter((c) => atLedger.has(c)).map((c) => controlButton(c)));

    counts.replaceChildren(...Object.entries(stepCounts).map(([status, n], i) => [i ? ' · ' : 'Steps: ', `${n} ${status}`]).flat());
    phases.replaceChildren(...phaseSections({
      detail, entries, maxAttempts: session.limits?.step_max_attempts,
      signalled: (name) => signalsReceived.has(name),
      controls: (step) => offered(step).map((c) => controlButton(c, step)),
      extend: extendButton,
      window: (number) => windows.get(number) ?? null,
      moveWindow: (number, start) => {
        if (start === null) windows.delete(number); else windows.set(number, start);
        render();
        focus(phases.querySelector(`[data-steps-shown="${number}"]`)); // says which steps now show
      },
    }));
    log.show(entries, namer(steps), people);
    putBack();
  }

  async function tailLog() {
    for (;;) {
      const answer = await get(`/runs/${runId}/log?after_id=${afterId}&limit=${LOG_PAGE}`);
      const page = answer.entries;
      Object.assign(people, answer.people);
      for (const entry of page) {
        entries.push(entry);
        afterId = Math.max(afterId, entry.id);
        if (entry.kind === 'run.signal') signalsReceived.add(entry.detail?.name);
      }
      if (page.length < LOG_PAGE) return;
    }
  }

  // The API answers a run's steps a page at a time (steps_next_cursor): the page holds them all.
  const fetchRun = () => getRun(runId);

  async function load() {
    try {
      const fetched = await fetchRun();
      await loadName(fetched.run);
      detail = fetched;
      await tailLog();
      // A row of a step the run's read did not have (a phase begun between the two reads) is named once the
      // steps are read again: never "step id 25", nor kept so on a run that finished meanwhile.
      const known = new Set(detail.steps.map((s) => s.id));
      if (entries.some((entry) => entry.step_id != null && !known.has(entry.step_id))) detail = await fetchRun();
    } catch (caught) {
      const error = asApiError(caught);
      if (error.status === 404) {
        main.replaceChildren(heading(1, `No run ${runId}`), el('p', {}, el('a', { href: '#/runs' }, 'See the runs.')));
        return 'over';
      }
      if (error.status === 403) {
        notice(`Not allowed to see this run: ${error.messages.join(' ')}`, 'error');
      } else if (error.status !== 401) {
        // Beside the connection's state, not in the notice (a press's outcome stays there), and gone once a load works.
        loadFailed = true;
        sayState('connection', `The run could not be loaded: ${error.messages.join(' ')}.`, 'error', ` What it shows is as of`
          + ` ${poller.loadedAt ? poller.loadedAt.toLocaleTimeString() : 'the last update'}; it is read again shortly.`);
      }
      throw error;
    }
    if (loadFailed) {
      loadFailed = false;
      if (!pendingRetry()) say('connection', '');
    }
    const snapshot = JSON.stringify([detail, afterId]);
    if (snapshot !== shown) { // re-rendered only when something changed, so focus stays put
      shown = snapshot;
      render();
    }
    // After the steps and controls are on the page: the ledger reads itself only when it moved, and says in
    // its own section when it cannot (it never throws).
    await ledger.refresh(detail, entries);
    // A finished run is over, unless its Clean up is under way (its status kept): the page follows it to its end. A
    // run scheduled further off than a couple of minutes is checked at the idle pace, and live again by its time.
    if (isTerminalRun(detail.run.status)) return detail.run.late_cleanup === 'started' ? 'live' : 'over';
    return isLive(detail.run) ? 'live' : 'idle';
  }

  const poller = new Poller(load, freshness(fresh), { liveAt: () => (detail ? liveFrom(detail.run) : null) });
  poller.now();
  return () => poller.stop();
}
