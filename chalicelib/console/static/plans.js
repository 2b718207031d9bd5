// @ts-check
// When plans change: a scheduled run postponed to a new time, a live phase's deadline moved by some minutes, a
// recurring definition's schedule paused or resumed — each asked for in a dialog with its reason, then sent.
// The calendar, the runs list, a run's page and a definition's page press them through here.

import { asApiError } from './api.js';
import { explain } from './explain.js';
import { claim, pressAttrs, pressLabel, sendAsOne } from './press.js';
import { clock, controlOf, el, focusBack, modal, notice, unsent } from './ui.js';

const pad = (n) => String(n).padStart(2, '0');
// A time as a datetime-local input holds it, in the viewer's zone.
const local = (date) => `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;

// A dialog asking for one value (`field`: its label and input attributes; none: the reason alone), a reason
// and, where `option` names one, a yes-or-no choice: resolves to {value, reason, option}, or null if the person
// went back.
function askFor({ title, field = null, action, what = null, why = 'Why (kept in the log)', option = null }) {
  const input = field ? el('input', { id: 'plan-value', required: true, ...field.attrs }) : null;
  const reason = el('textarea', { id: 'plan-reason', rows: '2', maxlength: '500' });
  const box = option ? el('input', { type: 'checkbox', id: 'plan-option' }) : null;
  return modal({
    title, action, focused: input || reason,
    answer: () => ({ value: input?.value, reason: reason.value.trim(), option: Boolean(box?.checked) }),
    parts: [
      what && el('p', { id: 'ask-what' }, what),
      field && [el('label', { for: 'plan-value' }, field.label), input],
      el('label', { for: 'plan-reason' }, why), reason,
      box && el('p', {}, box, ' ', el('label', { for: 'plan-option' }, option))],
  });
}

// Sends a change and says how it went; true if it took. `action`: what the person pressed, as the notices name it.
// An answer lost on the way is sent again as the same press (press.js sendAsOne), and never said as "did not work":
// whether it took is not known until the API answers.
async function sent(path, body, done, doing, action) {
  try {
    const { answer, after } = await sendAsOne(path, body, { action, pressed: action });
    notice(`${done(answer)}${after}`, 'ok');
    return true;
  } catch (caught) {
    const error = asApiError(caught);
    const reason = body.reason ? ` Your reason: “${body.reason}”.` : '';
    const look = 'look at it before pressing it again';
    if (error.status === 401) { // said on the sign-in page, the reason kept (ui.js unsent)
      unsent(error.lost ? `Your ${action} may or may not have taken (its answer was lost, then your sign-in ended): ${look}.${reason}`
        : `Your ${action} was not sent: your sign-in ended first.${body.reason ? ` Your reason, not sent: “${body.reason}”.` : ''}`);
    } else if (error.lost && error.status === 409) {
      notice(`${action}: its answer was lost on the way, and sent again it was refused (${error.messages.join(' ')}), so the`
        + ` first sending most likely took: ${look}.${reason}`, 'warning');
    } else if (error.lost || error.detail.unanswered) {
      notice(`${action}: the API has not answered for minutes, so whether it took is not known: ${look} once it answers.${reason}`,
        'warning');
    } else {
      explain(error, doing);
    }
    return false;
  }
}

// A move of a time asked and sent as one press of `path`: from the tap until its answer its buttons say
// "Sending…" and a second tap opens nothing (sent twice, a deadline would move twice); false if one is on its way.
// Its answer said, focus goes back to the button (disabled while it was sent, it could not take it back when the
// dialog closed): a keyboard user goes on from where they were, the result in the notice.
async function once(path, move) {
  const giveBack = focusBack();
  const release = claim(path);
  if (!release) return false;
  try {
    return await move();
  } finally {
    release();
    giveBack();
  }
}

// Postpone a scheduled run (`run`: its id and scheduled_for; `named`: how the page names it).
export function postpone(run, named) {
  return once(`/runs/${run.id}/postpone`, () => askedPostpone(run, named));
}

async function askedPostpone(run, named) {
  const at = new Date(run.scheduled_for);
  const chosen = await askFor({
    title: `Postpone ${named}?`, action: 'Postpone',
    what: `It is scheduled for ${at.toLocaleString()}; it keeps its place in the calendar, at its new time.`,
    field: { label: 'New time (your time zone)', attrs: { type: 'datetime-local', value: local(new Date(at.getTime() + 30 * 60000)) } },
  });
  if (chosen === null) return false;
  const to = new Date(chosen.value);
  return sent(`/runs/${run.id}/postpone`, { to: to.toISOString(), ...(chosen.reason ? { reason: chosen.reason } : {}) },
    () => `${named} is postponed to ${to.toLocaleString()}.`, 'Postponing', `Postpone (${named})`);
}

// Move a deadline by some minutes: a phase's (`path` its extend, `named` the phase, `deadline` its deadline) or
// a parked cue's timeout (its extend_cue).
export function moveBy({ path, named, deadline }) {
  return once(path, () => askedMove(path, named, deadline));
}

async function askedMove(path, named, deadline) {
  const chosen = await askFor({
    title: `Move the deadline of ${named}?`, action: 'Move deadline',
    what: `Its deadline is ${new Date(deadline).toLocaleTimeString()}. Later with minutes, earlier with minus minutes.`,
    field: { label: 'Minutes', attrs: { type: 'number', step: '1', value: '10' } },
  });
  if (chosen === null) return false;
  const seconds = Math.round(Number(chosen.value) * 60);
  return sent(path, { seconds, ...(chosen.reason ? { reason: chosen.reason } : {}) },
    () => `The deadline of ${named} is moved by ${chosen.value} min.`, 'Moving the deadline', `Move deadline (${named})`);
}

// Whether this session may press a declared control (its roles).
export const mayPress = (session, name) => (controlOf(name)?.roles || []).some((role) => session.roles.includes(role));

// A scheduled run's Postpone button on a row of the runs list, for whoever may press it.
export function postponeAction(session, run, reload) {
  if (run.status !== 'scheduled' || !mayPress(session, 'postpone')) return null;
  const path = `/runs/${run.id}/postpone`;
  return el('button', {
    type: 'button', class: 'small', 'data-control': 'postpone', 'data-run': run.id,
    onclick: async () => { if (await postpone(run, `run ${run.id}`)) reload(); },
    ...pressAttrs(path, controlOf('postpone').label),
  }, pressLabel(path, controlOf('postpone').label));
}

// Who moved a phase's deadline, when and why: " (moved by mod-mia at 20:14: the boss runs long)".
export function deadlineMoved(phase) {
  if (!phase.deadline_moved_by) return [];
  const why = phase.deadline_moved_reason ? `: ${phase.deadline_moved_reason}` : '';
  return [el('span', { class: 'deadline-moved', 'data-deadline-moved-by': phase.deadline_moved_by },
    ` (moved by ${phase.deadline_moved_by} at `, clock(phase.deadline_moved_at), `${why})`)];
}

// A recurring definition's schedule paused or resumed (`definition`: its id, name and schedule_paused).
export async function pauseOrResume(definition) {
  const paused = definition.schedule_paused;
  if (paused) {
    const chosen = await askFor({
      title: `Resume the schedule of ${definition.name}?`, action: 'Resume schedule',
      what: 'Its occurrences are planned again from now on; those missed while it was paused are not created.',
      option: 'Start the latest occurrence missed while it was paused, if it is still within its grace',
    });
    if (chosen === null) return false;
    const body = { catch_up: chosen.option ? 'latest' : 'none', ...(chosen.reason ? { reason: chosen.reason } : {}) };
    return sent(`/definitions/${definition.id}/schedule/resume`, body, (answer) => `The schedule of ${definition.name} runs again`
      + (answer.caught_up ? `; run ${answer.caught_up.id} starts the occurrence of ${new Date(answer.caught_up.scheduled_for).toLocaleString()}.`
        : chosen.option ? '; no occurrence missed meanwhile is within its grace.' : '.'), 'Resuming the schedule',
    `Resume schedule (${definition.name})`);
  }
  const chosen = await askFor({
    title: `Pause the schedule of ${definition.name}?`, action: 'Pause schedule',
    what: 'No occurrence of it is planned until it is resumed; runs already planned stay.',
    why: 'Why (shown on the calendar)',
  });
  if (chosen === null) return false;
  return sent(`/definitions/${definition.id}/schedule/pause`, chosen.reason ? { reason: chosen.reason } : {},
    () => `The schedule of ${definition.name} is paused.`, 'Pausing the schedule', `Pause schedule (${definition.name})`);
}

// "paused by mod-mia because holiday break": how the calendar marks a paused schedule's occurrences.
export const pausedWords = (paused) => `paused by ${paused.by}${paused.reason ? ` because ${paused.reason}` : ''}`;

// A definition's Pause or Resume schedule button.
export function pauseButton(definition, reload) {
  const label = definition.schedule_paused ? 'Resume schedule' : 'Pause schedule';
  return el('button', {
    type: 'button', class: 'small', 'data-schedule-action': definition.schedule_paused ? 'resume' : 'pause', 'data-definition': definition.id,
    onclick: async () => { if (await pauseOrResume(definition)) reload(); },
  }, label);
}
