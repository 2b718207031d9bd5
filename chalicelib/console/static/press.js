// @ts-check
// Pressing a control, as every page presses it (the run page's buttons and banners, the inbox's rows): what it
// asks first (its declaration's question and note field, what a costly one will do, cancel's cleanup), then the
// POST, and what the answer means (a refusal explained as the run page explains every refusal).
//
// `page`: {runId, detail() (the run's GET /runs/{id} as last read), offered(step) (the controls offered on it,
// null: the run's), runNamed(), session, refresh() (re-reads the page), landing (what takes focus after, when no
// notice says how it went),
// explain?(name) (the page's own words for what a control will do), moveTime?(name, step) (a time's dialog),
// fromRow? (pressed from a row of a list that moves as it refreshes: every control asks first, naming the run and
// the step, Retry too, so a row slid under a finger is never pressed unseen)}.
//
// A press is sent once: from the tap (its run read first on the runs list, its dialog asked) until its answer its
// buttons say "Sending…" and are disabled, on whichever page draws them (`pressAttrs`), and a second tap of the
// same control neither opens a second dialog nor sends behind it; its answer, when it comes, is the one the notice says.
//
// A press whose answer is lost (the connection dropped after it went out) may have taken: the notice says so at
// once, and the press is sent again with the same Idempotency-Key and If-Match until the API answers, which says
// what happened — its first answer if it had taken (Idempotent-Replayed), else whether it takes now or is refused —
// never "did not work" for a press that took. A press a 401 stops is said on the sign-in page, with the note typed.

import { ApiError, asApiError, neededRoles, post, pressing } from './api.js';
import { stepName, wordsBeyondName } from './names.js';
import { phaseNamed } from './phases.js';
import { askCancel } from './resources.js';
import { ask, capitalised, controlOf, el, focus, isOpenStep, notice, parkOf, unsent } from './ui.js';

// What each control asks for first and how it is named on the page come from its declaration
// (GET /vocabulary). A control this console was not told of is a plain button named after it
// that asks nothing: the API still decides whether it takes.
export function specOf(name) {
  const declared = controlOf(name);
  if (!declared) return { field: null, phaseField: null, action: name, done: `${name}: done`, tone: null };
  // A control that asks nothing first (acknowledge: its note is optional) is pressed at once; one whose note
  // is required (take-over) is not sent without it.
  const field = declared.question ? declared.note_field : null;
  const required = Boolean(declared.note_required);
  return {
    field, required, label: field ? `${capitalised(field)} (${required ? 'required' : 'optional'})` : null, title: declared.question,
    action: declared.label, done: declared.done, tone: declared.tone, phaseField: declared.phase_field || null,
    option: declared.option_field || null, choiceField: declared.choice_field || null,
    holderField: declared.holder_field || null, versionField: declared.version_field || null,
  };
}

// The answers a control may carry on `step` (a cue with choices, its confirm: [{value, label}]), else none.
export function choicesOf(name, step) {
  return specOf(name).choiceField && step && !parkOf(step)?.decision ? (step.params?.choices || []) : [];
}

// The presses on their way, by their path ("/runs/6/steps/42/confirm"): a control's buttons carry their path
// (`data-press`), so the page marks them while it is sent and draws them so while the page is rebuilt meanwhile.
const sending = new Set();
const SENDING = 'Sending…';

export const pressPath = (runId, name, stepId = null) => (stepId == null ? `/runs/${runId}/${name}` : `/runs/${runId}/steps/${stepId}/${name}`);

// Whether a press of `path` is asked or on its way.
export const onItsWay = (path) => sending.has(path);

// A control's button's attributes beyond its own: its path and, while a press of it is on its way, disabled.
// `named`: its accessible name, when its label alone does not say what it acts on ("Confirm, Run 6 · Phase 1 · step
// 2 (…)"); "Sending… " goes in front of it while the press is on its way, as on the button (aria-busy is rarely said).
export function pressAttrs(path, label, named = null) {
  const on = sending.has(path);
  return {
    'data-press': path, 'data-label': label, disabled: on, 'aria-busy': on ? 'true' : null, 'data-sending': on,
    'data-named': named, 'aria-label': named && (on ? `${SENDING} ${named}` : named),
  };
}

// Its label, or "Sending…" while a press of it is on its way.
export const pressLabel = (path, label) => (sending.has(path) ? SENDING : label);

// How many times a press whose answers are lost is sent again as the same press (each api.js's dozen attempts, about
// a minute) before the page says it cannot tell whether it took.
const ROUNDS = 5;

// The press of `path` taken for this tap: the function that lets it go (once), or null while another press of it
// is asked or on its way.
export function claim(path) {
  if (sending.has(path)) return null;
  markSending(path, true);
  let held = true;
  return () => {
    if (held) markSending(path, false);
    held = false;
  };
}

function markSending(path, on) {
  if (on) sending.add(path); else sending.delete(path);
  for (const button of document.querySelectorAll('button[data-press]')) {
    if (!(button instanceof HTMLButtonElement) || button.dataset.press !== path) continue;
    button.disabled = on;
    button.toggleAttribute('data-sending', on);
    if (on) button.setAttribute('aria-busy', 'true'); else button.removeAttribute('aria-busy');
    button.textContent = on ? SENDING : (button.dataset.label || button.textContent);
    if (button.dataset.named) button.setAttribute('aria-label', on ? `${SENDING} ${button.dataset.named}` : button.dataset.named);
  }
}

// Sends one press of `path` until the API answers it: a sending whose answer is lost (the connection dropped after
// it went out) is sent again as the same press, with the same Idempotency-Key and If-Match (`asSeen`), so it cannot
// take twice, for ROUNDS rounds of api.js's attempts. The first loss is said at once (`pressed` names the press).
// Resolves to {answer, after}, `after` what a loss adds to the answer's words (whether the first sending had taken);
// rejects with the refusal, its `lost` set when an answer was lost before it.
export async function sendAsOne(path, body, { action, pressed, asSeen = pressing('POST', path) }) {
  const outcome = {};
  let lost = false;
  const onRetry = (retry) => {
    if (retry.answered || lost) return;
    lost = true;
    notice(`${pressed}: no answer yet, so whether it took is not known. It is sent again as the same press (it cannot`
      + ' take twice) until the API answers, and this says what happened.', 'warning');
  };
  for (let round = 1; ; round += 1) {
    try {
      const answer = await post(path, body, { ...asSeen, outcome, label: action, onRetry });
      const after = !lost ? '' : outcome.replayed ? ' It had taken: only its answer was lost on the way.'
        : ' It took when sent again: the first sending had not reached the server.';
      return { answer, after };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      error.lost = lost;
      if (!error.detail.unanswered || round >= ROUNDS) throw error;
    }
  }
}

export function presser(page) {
  const { runId, offered, runNamed, session } = page;

  const phaseRow = (number) => (page.detail().phases || []).find((p) => p.number === number);

  // The phase the page shows the run at, named: what a control with a phase field acts on.
  function currentPhase() {
    const number = page.detail().run.current_phase;
    return { number, named: phaseNamed(number, phaseRow(number)) };
  }

  // POSTs a control or a signal and explains the answer: `done(answer)` the words on success; a refusal
  // as the page explains every refusal (409 the run has moved, 412 it changed while the person looked —
  // both re-read the page — 403 the role needed; 401 signs out). `typed`: what the person wrote in the
  // control's dialog ({label, text}), given back in a refusal's notice so it is not lost; `shown`: the run's
  // status as the page showed it when the person pressed.
  async function send(path, body, { action, done, about = '', typed = null, shown = null, release = null, how = null }) {
    const kept = typed?.text ? ` Your ${typed.label.toLowerCase()}, not sent: “${typed.text}”.` : '';
    const pressed = `${action}${about ? ` (${about})` : ''}`;
    const mine = release || claim(path);
    if (!mine) return; // the same control, already on its way: its own answer will be said
    try {
      // Its key and the tag of what the person saw when they tapped (`how`, taken before any dialog: the page polls
      // behind it), the same on every send of this press.
      const { answer, after } = await sendAsOne(path, body, { action, pressed, asSeen: how || pressing('POST', path) });
      notice(`${done(answer)}${after}`, 'ok');
    } catch (caught) {
      const error = asApiError(caught); // a fault of the page is said too, never a press gone without a word
      const { lost } = error; // a sending got no answer at all: it may have taken
      if (error.status === 401) {
        unsent(lost ? `Your ${pressed} may or may not have taken (its answer was lost, then your sign-in ended): look at the`
          + ` run before pressing it again.${kept}` : `Your ${pressed} was not sent: your sign-in ended first.${kept}`);
        return;
      }
      // Said once: a run that moved since the press (its status answered beside the message of a 409 or a 412)
      // is the whole story; else what changed (412), or the refusal's reason (409), the step it names already
      // named in the press.
      const now = error.detail.run_status;
      if ((error.stale || error.status === 409) && now && shown && now !== shown) {
        notice(`This run has moved: it is now ${now}, so ${pressed} did nothing.${kept}`, 'warning');
      } else if (error.stale) {
        notice(`${pressed} did nothing. ${error.messages.join(' ')}${kept}`, 'warning');
      } else if (error.status === 409) {
        const why = error.messages.map((m) => (about && m.startsWith(`${about}: `) ? m.slice(about.length + 2) : m));
        notice(`${pressed} did nothing: ${why.join(' ')}${kept}`, 'warning');
      } else if (lost || error.detail.unanswered) {
        notice(`${pressed}: the API has not answered for minutes, so whether it took is not known. Look at the run`
          + ` (it is read again when the API answers) before pressing it again.${typed?.text ? ` Your ${typed.label.toLowerCase()}: “${typed.text}”.` : ''}`,
        'warning');
      } else {
        // Nothing changed on the server, so no refresh: the explanation stays in view.
        const roles = neededRoles(error);
        notice(error.status === 403
          ? `Not allowed: this needs the role ${roles.length ? roles.join(' or ') : 'you do not have'}; you are signed in as ${session.roles.join(', ')}.`
          : `${action}${about ? ` ${about}` : ''} did not work: ${error.messages.join(' ')}${kept}`, 'error');
        focus(said() || page.landing);
        return;
      }
    } finally {
      mine();
    }
    await page.refresh();
    focus(said() || page.landing);
  }

  // Focus lands on the notice that says how a press went, once the page is redrawn: it is read then, whole (a
  // move to the heading cut a screen reader off mid-sentence), and the next Tab goes on into the page.
  const said = () => /** @type {HTMLElement | null} */ (document.querySelector('#notice .notice'));

  // What a costly control will do, said in its dialog before anything is sent: the page's own words first
  // (`page.explain(name)`: the run page's Advance and Resume, which read its log), else what any page knows.
  function consequence(name) {
    const explained = page.explain?.(name);
    if (explained) return explained;
    const detail = page.detail();
    if (name === 'cancel') {
      const open = detail.steps.filter(isOpenStep).length;
      return `${capitalised(runNamed())} stops for good: its ${open} open ${open === 1 ? 'step is' : 'steps are'} cancelled`
        + ' (a step already sent to the game is left to its answer), no later phase begins, and it cannot be resumed.';
    }
    if (name === 'cleanup') {
      const live = detail.ledger?.counts?.live || 0;
      return `Each of the ${live} ${live === 1 ? 'resource' : 'resources'} ${runNamed()} left live in the game world is reverted,`
        + ` newest first, as listed under "Left in the game world" (one whose revert is never sent stays); the run stays ${detail.run.status}.`;
    }
    const failed = detail.steps.filter((s) => offered(s).includes('retry'));
    if (name === 'resume' && failed.length) {
      return `The run goes on from the step after the failed one; ${failed.map(stepName).join(', ')} stays failed.`;
    }
    return null;
  }

  // `choice`: the answer pressed, on a cue with choices ({value, label}); pressed without one (the inbox's row,
  // which does not know them), its dialog asks which. A control that moves a time
  // (postpone, a cue's extend) asks for it in its own dialog (`page.moveTime`).
  // `held`: the press already claimed for this tap (the runs list claims it before reading the run).
  async function act(name, step, choice = null, held = null) {
    if ((controlOf(name)?.time_field || controlOf(name)?.seconds_field) && page.moveTime) {
      if (held) held(); // plans.js takes the press itself, from its dialog to its answer
      return page.moveTime(name, step);
    }
    const path = pressPath(runId, name, step?.id);
    const release = held || claim(path);
    if (!release) return; // asked or on its way already: not asked twice, nor sent behind it
    const how = pressing('POST', path); // the tag of what the person saw at the tap, not what a poll read behind the dialog
    try {
      await asked(name, step, choice, path, release, how);
    } finally {
      release();
    }
  }

  async function asked(name, step, choice, path, release, how) {
    const spec = specOf(name);
    const shown = page.detail().run.status; // as the person saw it when they pressed
    // The version the page showed current at the tap (its dialog names it): an upgrade plays that one, and a
    // version saved since is refused (409), never played unseen, whatever a poll read behind the dialog.
    const current = page.detail().current_version;
    let body = {};
    let typed = null;
    const phase = spec.phaseField ? currentPhase() : null;
    const offeredChoices = choice ? [] : choicesOf(name, step);
    const radios = offeredChoices.map((option, i) => el('input', {
      type: 'radio', name: 'ask-choice', id: `ask-choice-${i}`, value: option.value, required: true,
    }));
    const consequences = choice ? `The answer: ${choice.label}.` : step ? null : consequence(name);
    const what = Array.isArray(consequences) && !consequences.length ? null : consequences;
    if (spec.option && !step) { // cancel: what it does, its reason, and whether to clean up what the run left
      const chosen = await askCancel(runId, { ...spec, title: spec.title || `${spec.action}?`, what });
      if (chosen === null) return;
      body = chosen;
      if (chosen[spec.field]) typed = { label: spec.field, text: chosen[spec.field] };
    } else if (spec.field || what || radios.length || page.fromRow) {
      const words = step ? wordsBeyondName(step) : null;
      const about = step ? ` (${stepName(step)}${words ? `: ${words}` : ''})` : phase ? ` (${phase.named})` : what ? '' : ` (${runNamed()})`;
      const text = await ask({
        title: `${spec.title || `${spec.action}?`}${about}`, label: spec.field ? spec.label : null, action: spec.action, what,
        required: spec.required, tone: spec.tone,
        extra: radios.length ? [el('fieldset', { id: 'ask-choices' }, el('legend', {}, 'The answer'),
          radios.map((radio, i) => el('label', { class: 'choice', for: radio.id }, radio, offeredChoices[i].label)))] : null,
      });
      if (text === null) return;
      const picked = radios.findIndex((radio) => /** @type {HTMLInputElement} */ (radio).checked);
      if (picked >= 0) choice = offeredChoices[picked];
      if (text) {
        body = { [spec.field]: text };
        typed = { label: spec.field, text };
      }
    }
    if (phase) body[spec.phaseField] = phase.number;
    if (choice) body[spec.choiceField] = choice.value;
    // Who has the cue as the page showed it when tapped: a take-over or release acts on that hold only (409 once
    // someone else has it; the step's tag leaves the holder out).
    if (spec.holderField && step?.acknowledged_by) body[spec.holderField] = step.acknowledged_by;
    if (spec.versionField && current != null) body[spec.versionField] = current;
    const named = step ? stepName(step) : `run ${runId}`;
    const answered = choice ? `: ${choice.label}` : '';
    await send(path, body, { action: spec.action, about: named, typed, shown, release, how, done: () => `${spec.done} ${named}${answered}.` });
  }

  return { act, send, currentPhase, phaseRow };
}
