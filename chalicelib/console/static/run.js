// A run's page: its phases and steps, counts, the live log tail, and exactly the controls the API offers.
//
// Controls come from GET /runs/{id} (`controls`), shown only to a role that may
// use them; nothing is guessed or greyed out. A refusal is explained: 409 as
// "this run has moved" with the page refreshed, 403 with the role it needs. A phase that waits for
// the game's signal says so, and staff may send that signal from the page (POST /runs/{id}/signals/{name}).

import { ApiError, get, neededRoles, post } from './api.js';
import { Poller, freshness } from './poll.js';
import { conditionWords, effectWords, phaseNamed, standingWords } from './phases.js';
import { ask, badge, capitalised, clock, controlOf, el, focus, heading, isTerminalRun, notice, table, when } from './ui.js';

const LOG_PAGE = 500;

// What each control asks for first and how it is named on the page come from its declaration
// (GET /vocabulary). A control this console was not told of is a plain button named after it
// that asks nothing: the API still decides whether it takes.
function specOf(name) {
  const declared = controlOf(name);
  if (!declared) return { field: null, phaseField: null, action: name, done: `${name}: done`, tone: null };
  // A control that asks nothing first (acknowledge: its note is optional) is pressed at once.
  const field = declared.question ? declared.note_field : null;
  return {
    field, label: field ? `${capitalised(field)} (optional)` : null, title: declared.question,
    action: declared.label, done: declared.done, tone: declared.tone, phaseField: declared.phase_field || null,
  };
}

function describeStep(step) {
  const p = step.params || {};
  const said = p.instruction || p.message;
  return said ? `${step.action_id}: ${said}` : step.action_id;
}

// What ended the phase before, as a run.phase row's `ended_by` says: {by, at, closed_by?}.
function endedBy(ended) {
  if (!ended?.by) return '';
  switch (ended.closed_by) {
    case 'signal': return ` (a signal from ${ended.by} ended the one before)`;
    case 'after': return ' (the one before lasted its time)';
    case 'timeout': return ' (the one before timed out)';
    default: return ` (${ended.by} ended the one before)`;
  }
}

function describeEntry(entry) {
  const d = entry.detail || {};
  const extra = [d.control && `by ${d.control}`, d.reason && `reason: “${d.reason}”`, d.note && `note: “${d.note}”`,
    d.cause && `(${d.cause})`].filter(Boolean).join(' ');
  switch (entry.kind) {
    case 'run.status': return d.from == null ? `Run ${d.to} ${extra}` : `Run ${d.from} → ${d.to} ${extra}`;
    case 'step.status': return `Step ${entry.step_id} ${d.action || ''} ${d.from} → ${d.to} ${extra}`;
    case 'run.phase': return `Phase ${d.phase} “${d.name}” began${endedBy(d.ended_by)}`;
    case 'run.signal': return `Signal ${d.name} from ${d.by}: ${effectWords(d.effect, `phase ${entry.phase ?? '?'}`)}`;
    case 'run.advance': return `Phase ${d.phase} advanced by ${entry.actor}${d.reason ? ` reason: “${d.reason}”` : ''}: ${d.skipped_steps} steps skipped${d.resumed ? ', run resumed' : ''}`;
    case 'step.dispatch': return `Step ${entry.step_id} ${d.action || ''} dispatched (attempt ${d.attempt ?? '?'}): ${
      [d.outcome, d.http_status && `HTTP ${d.http_status}`, d.latency_ms != null && `${d.latency_ms} ms`, d.error,
        d.fenced_out && 'answered too late, not applied'].filter(Boolean).join(', ')}`;
    default: return `${entry.kind} ${JSON.stringify(d)}`;
  }
}

// ", until 20:15" for a wait with a time limit; nothing without one.
function until(iso) {
  return iso ? [', until ', clock(iso)] : [];
}

// Words and <time> elements as a sentence: its first word capitalised.
function sentence(parts) {
  const flat = parts.flat(Infinity).filter((part) => part !== '');
  const [first, ...rest] = flat;
  return typeof first === 'string' ? [capitalised(first), ...rest] : flat;
}

function stepState(step) {
  return step.parked ? badge('parked', 'parked: waiting') : badge(step.status);
}

export function runView(main, ctx, runIdText) {
  const runId = Number(runIdText);
  const session = ctx.session();
  const title = heading(1, `Run ${runId}`, { id: 'run-title' });
  const summary = el('div', { id: 'run-summary' });
  const banners = el('div', { id: 'run-banners' });
  const runControls = el('div', { id: 'run-controls', class: 'buttons' });
  const counts = el('p', { id: 'run-counts' });
  const phases = el('div', { id: 'run-phases' });
  const logList = el('ol', { id: 'run-log', class: 'log' });
  const fresh = el('p', { class: 'freshness muted', id: 'freshness' });
  main.replaceChildren(
    el('p', {}, el('a', { href: '#/runs' }, '← All runs')),
    title, summary, banners, runControls, fresh,
    el('section', { 'aria-labelledby': 'steps-title' }, el('h2', { id: 'steps-title' }, 'Phases and steps'), counts, phases),
    el('section', { 'aria-labelledby': 'log-title' }, el('h2', { id: 'log-title' }, 'Log'),
      el('div', { class: 'log-box', tabindex: '0', 'aria-label': 'Run log, oldest first' }, logList)),
  );

  let afterId = 0;
  let shown = '';
  let definitionName = null; // for the title; the phases name themselves (GET /runs/{id} `phases`)
  let detail = null;
  const signalsReceived = new Set(); // the names of the run.signal rows the log has shown

  async function loadName(run) {
    if (definitionName !== null) return;
    try {
      definitionName = (await ctx.definitions()).find((d) => d.id === run.definition_id)?.name || '';
    } catch {
      definitionName = ''; // a nicety: the run is still shown
    }
  }

  function controlButton(name, step) {
    const spec = specOf(name);
    const label = step ? `${spec.action} step ${step.id}` : spec.action;
    return el('button', {
      type: 'button', class: spec.tone,
      'data-control': name, 'data-step': step ? step.id : null, onclick: () => act(name, step),
    }, label);
  }

  // Whether this person may press a control: its declaration's `roles`, or on a parked cue its `cue_roles`
  // (a gm, on their cue). A control the vocabulary did not declare is for those who may control at all.
  function mayPress(name, step) {
    const declared = controlOf(name);
    if (!declared) return session.may.control;
    const held = (roles) => (roles || []).some((role) => session.roles.includes(role));
    return held(declared.roles) || Boolean(step?.parked && held(declared.cue_roles));
  }

  function offered(step) {
    if (!detail) return [];
    const offer = step ? (detail.controls.steps[String(step.id)] || []) : detail.controls.run;
    return offer.filter((name) => mayPress(name, step));
  }

  // "Rowan has it since 20:14": who acknowledged a parked cue, from the step or the run's `waiting`.
  function hasIt(step) {
    const waiting = detail.waiting?.for === 'cue' && detail.waiting.step_id === step.id ? detail.waiting : {};
    const by = step.acknowledged_by || waiting.acknowledged_by;
    const at = step.acknowledged_at || waiting.acknowledged_at;
    return by ? el('p', { class: 'has-it', 'data-has-it': by }, `${by} has it`, at ? [' since ', clock(at)] : '', '.') : null;
  }

  const phaseRow = (number) => (detail.phases || []).find((p) => p.number === number);

  // The phase the page shows the run at, named: what a control with a phase field acts on.
  function currentPhase() {
    const number = detail.run.current_phase;
    return { number, named: phaseNamed(number, phaseRow(number)) };
  }

  // The signal the run's current phase waits for, if any: `waiting.for` signal once its steps are done
  // (`held`), or, while its steps still go on (nothing or a cue awaited), its row's signal not yet met.
  function awaitedSignal() {
    const { waiting, run } = detail;
    if (waiting?.for === 'signal') {
      return { name: waiting.signal, number: waiting.phase, named: phaseNamed(waiting.phase, phaseRow(waiting.phase)), until: waiting.until, held: true };
    }
    const row = phaseRow(run.current_phase);
    if ((waiting && waiting.for !== 'cue') || isTerminalRun(run.status) || !row?.signal || row.condition_met || row.closed_at) return null;
    return { name: row.signal, number: row.number, named: phaseNamed(row.number, row), until: row.deadline, held: false };
  }

  // POSTs a control or a signal and explains the answer: `done(answer)` the words on success; a refusal
  // as the page explains every refusal (409 the run has moved, 403 the role needed; 401 signs out).
  async function send(path, body, { action, done }) {
    try {
      notice(done(await post(path, body)), 'ok');
    } catch (error) {
      if (!(error instanceof ApiError) || error.status === 401) return;
      if (error.status === 409) {
        const now = error.detail.run_status; // the status the run is actually in, answered beside the message
        notice(`This run has moved: it is now ${now || 'changed'}. ${error.messages.join(' ')}`, 'warning');
      } else {
        // Nothing changed on the server, so no refresh: the explanation stays in view.
        const roles = neededRoles(error);
        notice(error.status === 403
          ? `Not allowed: this needs the role ${roles.length ? roles.join(' or ') : 'you do not have'}; you are signed in as ${session.roles.join(', ')}.`
          : `${action} did not work: ${error.messages.join(' ')}`, 'error');
        focus(title);
        return;
      }
    }
    await poller.now();
    focus(title);
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

  async function act(name, step) {
    const spec = specOf(name);
    let body = {};
    const phase = spec.phaseField ? currentPhase() : null;
    if (spec.field) {
      const about = step ? ` (step ${step.id}: ${describeStep(step)})` : phase ? ` (${phase.named})` : '';
      const text = await ask({ title: `${spec.title}${about}`, label: spec.label, action: spec.action });
      if (text === null) return;
      if (text) body = { [spec.field]: text };
    }
    if (phase) body[spec.phaseField] = phase.number;
    const path = step ? `/runs/${runId}/steps/${step.id}/${name}` : `/runs/${runId}/${name}`;
    await send(path, body, { action: spec.action, done: () => `${spec.done}${step ? ` step ${step.id}` : ` run ${runId}`}.` });
  }

  function render() {
    const { run, steps, counts: stepCounts } = detail;
    document.title = `Run ${run.id} (${run.status}) · Event runs`;
    title.textContent = `Run ${run.id}${definitionName ? `: ${definitionName}` : ''}`;
    summary.replaceChildren(el('dl', { class: 'facts' },
      el('dt', {}, 'Status'), el('dd', { id: 'run-status', 'data-status': run.status }, badge(run.status)),
      el('dt', {}, 'Health'), el('dd', {}, badge(run.health)),
      el('dt', {}, 'Definition'), el('dd', {}, `${definitionName || `definition ${run.definition_id}`}, version ${run.definition_version}`),
      el('dt', {}, 'Scheduled for'), el('dd', {}, when(run.scheduled_for)),
      el('dt', {}, 'Started'), el('dd', {}, when(run.started_at)),
      el('dt', {}, 'Finished'), el('dd', {}, when(run.finished_at)),
      run.last_error ? [el('dt', {}, 'Last error'), el('dd', { class: 'error-text', id: 'run-last-error' }, run.last_error)] : null));

    const bannerParts = [];
    for (const step of steps.filter((s) => s.parked)) {
      bannerParts.push(el('div', { class: 'banner banner-cue', role: 'region', 'aria-label': `Cue, step ${step.id}`, 'data-cue': step.id },
        el('p', {}, el('strong', {}, 'Waiting for a game master: '), step.params?.instruction || step.action_id),
        hasIt(step),
        el('div', { class: 'buttons' }, offered(step).filter((c) => c !== 'retry').map((c) => controlButton(c, step)))));
    }
    if (detail.waiting?.for === 'resume') {
      const failed = steps.filter((s) => offered(s).includes('retry'));
      bannerParts.push(el('div', { class: 'banner banner-paused', role: 'region', 'aria-label': 'Paused', id: 'paused-banner' },
        el('p', {}, el('strong', {}, 'Paused'), run.last_error ? `: ${run.last_error}` : ' by a person.'),
        el('div', { class: 'buttons' }, failed.map((s) => controlButton('retry', s)))));
    }
    if (detail.waiting?.for === 'advance') {
      const phase = currentPhase();
      bannerParts.push(el('div', { class: 'banner banner-cue', role: 'region', 'aria-label': 'Waiting to advance', id: 'advance-banner' },
        el('p', {}, el('strong', {}, 'Waiting for a person: '), `${phase.named} is done; it ends when someone advances it`,
          until(detail.waiting.until), '.')));
    }
    const signal = awaitedSignal();
    if (signal) {
      bannerParts.push(el('div', { class: 'banner banner-cue', role: 'region', 'aria-label': 'Waiting for the game', id: 'signal-banner', 'data-signal': signal.name },
        el('p', {}, el('strong', {}, 'Waiting for the game: '), `${capitalised(signal.named)} is waiting for the game's signal ${signal.name}`,
          until(signal.until), signal.held ? '; its steps are done.' : '; its steps go on meanwhile.'),
        session.may.control ? el('div', { class: 'buttons' }, el('button', {
          type: 'button', class: 'primary', id: 'send-signal', 'data-signal': signal.name, onclick: () => sendSignal(signal),
        }, `Send signal ${signal.name}`)) : null));
    }
    banners.replaceChildren(...bannerParts);
    runControls.replaceChildren(...offered(null).map((c) => controlButton(c)));

    counts.replaceChildren(...Object.entries(stepCounts).map(([status, n], i) => [i ? ' · ' : 'Steps: ', `${n} ${status}`]).flat());
    const byPhase = new Map();
    for (const step of steps) byPhase.set(step.phase, [...(byPhase.get(step.phase) || []), step]);
    // The run's phases as the API lists them; a phase with steps but no row (a run started
    // before phase rows existed) is still shown, by its number.
    const listed = new Map(detail.phases.map((p) => [p.number, p]));
    for (const number of byPhase.keys()) if (!listed.has(number)) listed.set(number, { number, kind: null, name: null, state: null });
    const sections = [];
    for (const phase of [...listed.values()].sort((a, b) => a.number - b.number)) {
      const { number, name } = phase;
      const phaseSteps = byPhase.get(number) || [];
      const current = run.current_phase === number && !isTerminalRun(run.status);
      const head = el('h3', { 'data-phase': number, 'data-kind': phase.kind || '', 'data-state': phase.state || '' },
        `Phase ${number}${name ? `: ${name}` : ''}`, current ? ' (current)' : '');
      const said = [...conditionWords(phase), standingWords(phase, { current, signalled: signalsReceived.has(phase.signal) })].filter((part) => part.length);
      const facts = said.length ? el('p', { class: 'phase-facts', 'data-phase-facts': number },
        sentence(said.flatMap((part, i) => [i ? ' · ' : '', part])), '.') : null;
      if (!phaseSteps.length) {
        sections.push(el('section', { class: 'phase' }, head, facts, el('p', { class: 'muted' }, 'Not started.')));
        continue;
      }
      const rows = phaseSteps.sort((a, b) => a.seq - b.seq).map((step) => el('tr', { 'data-step-row': step.id, 'data-status': step.parked ? 'parked' : step.status },
        el('td', {}, String(step.seq + 1)), // counted from 1 for people
        el('td', {}, describeStep(step)),
        el('td', {}, stepState(step)),
        el('td', {}, String(step.attempts)),
        el('td', {}, when(step.due_at)),
        el('td', { class: 'error-text' }, step.last_error || ''),
        el('td', {}, el('details', {}, el('summary', {}, 'show'), el('code', {}, step.idempotency_key))),
        el('td', {}, el('div', { class: 'buttons' }, offered(step).map((c) => controlButton(c, step))))));
      sections.push(el('section', { class: 'phase' }, head, facts,
        table(`Steps of phase ${number}`, ['#', 'Action', 'Status', 'Attempts', 'Due', 'Last error', 'Idempotency key', 'Controls'], rows)));
    }
    if (!sections.length) sections.push(el('p', { class: 'muted' }, 'Its phases are listed once the run starts.'));
    phases.replaceChildren(...sections);
  }

  async function tailLog() {
    for (;;) {
      const { entries } = await get(`/runs/${runId}/log?after_id=${afterId}&limit=${LOG_PAGE}`);
      for (const entry of entries) {
        logList.append(el('li', { 'data-kind': entry.kind, 'data-actor': entry.actor || '' },
          when(entry.created_at), ' ',
          el('span', { class: 'actor' }, entry.actor || 'engine'), ' ',
          el('span', {}, describeEntry(entry))));
        afterId = Math.max(afterId, entry.id);
        if (entry.kind === 'run.signal') signalsReceived.add(entry.detail?.name);
      }
      if (entries.length < LOG_PAGE) return;
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
    const snapshot = JSON.stringify([detail, [...signalsReceived]]);
    if (snapshot !== shown) { // re-rendered only when something changed, so focus stays put
      shown = snapshot;
      render();
    }
    return isTerminalRun(detail.run.status) ? 'over' : 'live';
  }

  const poller = new Poller(load, freshness(fresh));
  poller.now();
  return () => poller.stop();
}
