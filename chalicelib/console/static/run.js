// @ts-check
// A run's page: its story (banners), progress, phases and steps, the live log, and exactly the controls the API offers.
//
// Controls come from GET /runs/{id} (`controls`), shown only to a role that may
// use them; nothing is guessed or greyed out. A refusal is explained: 409 as
// "this run has moved" with the page refreshed, 403 with the role it needs. A phase that waits for
// the game's signal says so, and staff may send that signal from the page (POST /runs/{id}/signals/{name}).

import { get } from './api.js';
import { banners, lastMove } from './banners.js';
import { logView } from './log.js';
import { namer, stepName } from './names.js';
import { Poller, freshness } from './poll.js';
import { presser, specOf } from './press.js';
import { effectWords, phaseNamed } from './phases.js';
import { phaseSections, progress, stepErrs, stepHistory } from './steps.js';
import { ask, badge, controlOf, el, heading, isTerminalRun, notice, pageTitle, parkOf, rehearsalMark, waitOf, when } from './ui.js';
import { ledgerSection } from './resources.js';

const LOG_PAGE = 500;

export function runView(main, ctx, runIdText) {
  const runId = Number(runIdText);
  const session = ctx.session();
  const title = heading(1, `Run ${runId}`, { id: 'run-title' });
  const summary = el('div', { id: 'run-summary' });
  const bannerBox = el('div', { id: 'run-banners' });
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
    title, rehearsal, runProgress, bannerBox, runControls, summary, fresh,
    el('section', { 'aria-labelledby': 'steps-title' }, el('h2', { id: 'steps-title' }, 'Phases and steps'), counts, phases),
    ledger.element,
    el('section', { 'aria-labelledby': 'log-title' }, el('h2', { id: 'log-title' }, 'Log'), log.node),
  );

  const entries = []; // the whole log so far, oldest first
  let afterId = 0;
  let shown = '';
  let definitionName = null; // for the title; the phases name themselves (GET /runs/{id} `phases`)
  let detail = null;
  const signalsReceived = new Set(); // the names of the run.signal rows the log has shown

  async function loadName(run) {
    if (definitionName !== null) return;
    try {
      const named = async (fresh) => (await ctx.definitions({ fresh })).find((d) => d.id === run.definition_id)?.name;
      definitionName = (await named(false)) || (await named(true)) || ''; // a definition newer than the sign-in's list
    } catch {
      definitionName = ''; // a nicety: the run is still shown
    }
  }

  // A control's button; on a cue with choices, a control that carries the answer (confirm) is a button per
  // choice, each its label.
  function controlButton(name, step, label = step ? `${specOf(name).action} ${stepName(step)}` : specOf(name).action) {
    const spec = specOf(name);
    const choices = spec.choiceField && step && !parkOf(step)?.decision ? (step.params?.choices || []) : [];
    if (choices.length) {
      return choices.map((choice) => el('button', {
        type: 'button', class: spec.tone, 'data-control': name, 'data-step': step.id, 'data-choice': choice.value,
        'aria-label': `${spec.action} ${stepName(step)}: ${choice.label}`, onclick: () => act(name, step, choice),
      }, choice.label));
    }
    return el('button', {
      type: 'button', class: spec.tone,
      'data-control': name, 'data-step': step ? step.id : null, onclick: () => act(name, step),
    }, label);
  }

  // Whether this person may press a control: its declaration's `roles`, or on a parked cue its `cue_roles`
  // (a gm, on their cue). A control the vocabulary did not declare is for those who may control at all.
  // Whoever has a cue decides the rest, as the declaration's `holder` says: a control for the others (take
  // over) is not theirs, and one the cue roles press on their own cue only (release) is theirs alone.
  function mayPress(name, step) {
    const declared = controlOf(name);
    if (!declared) return session.may.control;
    const held = (roles) => (roles || []).some((role) => session.roles.includes(role));
    const mine = Boolean(step?.acknowledged_by) && step.acknowledged_by === session.sub;
    if (declared.holder === 'others' && mine) return false;
    return held(declared.roles)
      || Boolean(step?.parked && held(declared.cue_roles) && (declared.holder !== 'own' || mine));
  }

  function offered(step) {
    if (!detail) return [];
    const offer = step ? (detail.controls.steps[String(step.id)] || []) : detail.controls.run;
    return offer.filter((name) => mayPress(name, step));
  }

  const runNamed = () => `run ${runId}${definitionName ? ` (${definitionName})` : ''}`;
  const { act, send, currentPhase, phaseRow } = presser({
    runId, detail: () => detail, offered, runNamed, session, refresh: () => poller.now(), landing: title,
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

  const signalButton = (signal) => (session.may.control ? el('div', { class: 'buttons' }, el('button', {
    type: 'button', class: 'primary', id: 'send-signal', 'data-signal': signal.name, onclick: () => sendSignal(signal),
  }, `Send signal ${signal.name}`)) : null);

  // The run's last_error is an error when the engine stopped it (a failed step); a person's stop is their reason.
  function lastErrorFact(run) {
    if (!run.last_error) return null;
    const move = lastMove(entries, run.status);
    const history = stepHistory(entries);
    const failedStep = detail.steps.some((s) => stepErrs(s, history));
    if (move?.by && !failedStep) return [el('dt', {}, 'Reason'), el('dd', { id: 'run-reason' }, run.last_error)];
    return [el('dt', {}, 'Last error'), el('dd', { class: 'error-text', id: 'run-last-error' }, run.last_error)];
  }

  function render() {
    const { run, steps, counts: stepCounts } = detail;
    pageTitle(`Run ${run.id} (${run.status}) · Event runs`);
    title.textContent = `Run ${run.id}${definitionName ? `: ${definitionName}` : ''}`;
    rehearsal.replaceChildren(...(run.rehearsal ? [rehearsalMark(run),
      ` A dry run at ${run.rehearsal.speed}× speed, its module actions ${run.rehearsal.bridge === 'sandbox' ? 'sent to the sandbox' : 'simulated'}:`
      + ' nothing reaches the live game or the live channels.'] : []));
    summary.replaceChildren(el('dl', { class: 'facts' },
      el('dt', {}, 'Status'), el('dd', { id: 'run-status', 'data-status': run.status }, badge(run.status)),
      el('dt', {}, 'Health'), el('dd', {}, badge(run.health)),
      el('dt', {}, 'Definition'), el('dd', {}, `${definitionName || `definition ${run.definition_id}`}, version ${run.definition_version}`),
      el('dt', {}, 'Scheduled for'), el('dd', {}, when(run.scheduled_for)),
      el('dt', {}, 'Started'), el('dd', {}, when(run.started_at)),
      el('dt', {}, 'Finished'), el('dd', {}, when(run.finished_at)),
      lastErrorFact(run)));
    runProgress.replaceChildren(...progress(detail));
    const told = banners({
      detail, entries, offered, button: controlButton, currentPhase, awaitedSignal, signalButton,
    });
    bannerBox.replaceChildren(...told.parts);
    runControls.replaceChildren(...offered(null).filter((c) => !told.taken.has(c)).map((c) => controlButton(c)));

    counts.replaceChildren(...Object.entries(stepCounts).map(([status, n], i) => [i ? ' · ' : 'Steps: ', `${n} ${status}`]).flat());
    phases.replaceChildren(...phaseSections({
      detail, entries, maxAttempts: session.limits?.step_max_attempts,
      signalled: (name) => signalsReceived.has(name),
      controls: (step) => offered(step).map((c) => controlButton(c, step)),
    }));
    log.show(entries, namer(steps));
  }

  async function tailLog() {
    for (;;) {
      const page = (await get(`/runs/${runId}/log?after_id=${afterId}&limit=${LOG_PAGE}`)).entries;
      for (const entry of page) {
        entries.push(entry);
        afterId = Math.max(afterId, entry.id);
        if (entry.kind === 'run.signal') signalsReceived.add(entry.detail?.name);
      }
      if (page.length < LOG_PAGE) return;
    }
  }

  // The API answers a run's steps a page at a time (steps_next_cursor): the page shows them all.
  async function fetchRun() {
    const whole = await get(`/runs/${runId}`);
    for (let page = whole; page.steps_next_cursor != null;) {
      page = await get(`/runs/${runId}?steps_cursor=${page.steps_next_cursor}`);
      whole.steps.push(...page.steps);
      Object.assign(whole.controls.steps, page.controls.steps);
    }
    return whole;
  }

  async function load() {
    try {
      const fetched = await fetchRun();
      await loadName(fetched.run);
      detail = fetched;
      await tailLog();
    } catch (error) {
      if (error.status === 404) {
        main.replaceChildren(heading(1, `No run ${runId}`), el('p', {}, el('a', { href: '#/runs' }, 'See the runs.')));
        return 'over';
      }
      if (error.status === 403) {
        notice(`Not allowed to see this run: ${error.messages.join(' ')}`, 'error');
      } else if (error.status !== 401) {
        notice(`The run could not be loaded: ${error.messages.join(' ')}`, 'error');
      }
      throw error;
    }
    const snapshot = JSON.stringify([detail, afterId]);
    if (snapshot !== shown) { // re-rendered only when something changed, so focus stays put
      shown = snapshot;
      render();
    }
    // After the steps and controls are on the page: the ledger reads itself only when it moved, and says in
    // its own section when it cannot (it never throws).
    await ledger.refresh(detail);
    return isTerminalRun(detail.run.status) ? 'over' : 'live';
  }

  const poller = new Poller(load, freshness(fresh));
  poller.now();
  return () => poller.stop();
}
