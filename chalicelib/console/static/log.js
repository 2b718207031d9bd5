// @ts-check
// A run's log as a person follows it: newest rows in view (it follows unless the person has scrolled up),
// filtered to people, the engine or errors, and each dispatch merged with the status row its answer wrote
// (one line: "Phase 1 · step 2 (world.spawn) attempt 1: ok, HTTP 200, 35 ms → done").

import { effectWords } from './phases.js';
import { el, filled, span, timeOfDay, when, wordOf } from './ui.js';

const ENGINE_ACTORS = new Set(['runner', null, undefined, '']);
const FILTERS = [['all', 'Everything'], ['people', 'People'], ['engine', 'Engine'], ['errors', 'Errors']];

// What ended the phase before, as a run.phase row's `ended_by` says: {by, at, closed_by?, deadline_passed?}.
function endedBy(ended) {
  if (!ended?.by) return '';
  const closedBy = wordOf('closed_by', ended.closed_by);
  // A deadline that closed it is the whole story; whoever met it may have come after the deadline.
  if (closedBy?.by_deadline) return ` (${filled(closedBy.ended, { by: ended.by })})`;
  const late = ended.deadline_passed ? ', its deadline had passed too' : '';
  return ` (${closedBy ? filled(closedBy.ended, { by: ended.by }) : `${ended.by} ended the one before`}${late})`;
}

// A person's words on a row: a reason, a note, or the engine's cause, each as what it is.
function said(d) {
  return [d.control && `by ${d.control}`, d.choice != null && `answer: ${d.choice}`, d.reason && `reason: “${d.reason}”`,
    d.note && `note: “${d.note}”`, d.cause && `(${d.cause})`].filter(Boolean).join(' ');
}

function answerWords(d) {
  const status = d.http_status && !String(d.error || '').startsWith(`HTTP ${d.http_status}`) && `HTTP ${d.http_status}`;
  return [d.outcome, status, d.latency_ms != null && `${d.latency_ms} ms`, d.error,
    d.fenced_out && 'answered too late, not applied'].filter(Boolean).join(', ');
}

// One dispatch (what the game answered to attempt N), in words: also each attempt in the steps' table.
export function attemptWords(d) {
  return `attempt ${d.attempt ?? '?'}: ${answerWords(d)}`;
}

// A reminder's or escalation try's post: where, and after how long a wait (a notice.failed row follows it
// when the post failed).
function sent(d) {
  return `sent to ${d.channel} after ${span((d.waited_seconds || 0) * 1000)} waiting`;
}

const try_ = (d) => (d.of > 1 ? ` (try ${d.attempt} of ${d.of})` : '');

// The post of a reminder or an escalation try failed: what, why, and whether it is tried again.
function failedWords(entry, nameOf) {
  const d = entry.detail || {};
  const who = entry.step_id ? nameOf(entry) : "Run's";
  const what = d.notice === 'step.reminder' ? `reminder ${d.n}` : `escalation try ${d.attempt}`;
  const next = d.again_at ? `; tried again at ${timeOfDay(d.again_at)}` : '; not tried again';
  return `${who} ${what} could not be posted to ${d.channel}: ${d.error}${next}`;
}

// How far a person moved a time: "10 min later", "5 min sooner".
const moved = (seconds) => `${span(Math.abs(seconds) * 1000)} ${seconds < 0 ? 'sooner' : 'later'}`;

// A move of a time a person made, in the viewer's zone: "from 20:15 to 20:25".
const fromTo = (d) => `${d.from ? `from ${timeOfDay(d.from)} ` : ''}to ${timeOfDay(d.to)}`;

// What a finished run's cleanup could not revert (a run.late_cleanup row's `left`): "; left in the game world: 2
// (cannot revert: undeclared action admin.ban_player)".
const leftWords = (left) => (left?.length ? `; left in the game world: ${left.map((l) => `${l.resources} (${l.why})`).join('; ')}` : '');

// A finished run's cleanup (Clean up; the run keeps its status): begun by a person, then done or failed.
function lateCleanupWords(d) {
  if (d.state === 'started') {
    const byHand = d.by_hand ? `, ${d.by_hand} by hand` : '';
    return `Clean up began: ${d.reverts} ${d.reverts === 1 ? 'thing' : 'things'} to revert${byHand}, newest first; the run keeps its status ${said(d)}`.trim();
  }
  if (d.state === 'failed') return `Clean up ended: ${d.reverted} reverted; ${d.cause}${leftWords(d.left)}`;
  return `Clean up done: ${d.reverted} reverted${leftWords(d.left)}`;
}

// `person(actor)`: who an actor is as a person reads them (the log answer's `people`: "Mira (Discord)" for
// `discord:4242`), for the rows that name someone besides their actor.
export function describeEntry(entry, nameOf, person = (actor) => actor) {
  const d = entry.detail || {};
  switch (entry.kind) {
    case 'run.status': return `Run ${d.from == null ? d.to : `${d.from} → ${d.to}`} ${said(d)}`.trim();
    case 'step.status': return `${nameOf(entry)} ${d.from} → ${d.to} ${said(d)}`.trim();
    case 'step.acknowledged': return `${nameOf(entry)} acknowledged: ${person(entry.actor)} has it${d.held_until ? ` until ${timeOfDay(d.held_until)}` : ''}${d.note ? `, note: “${d.note}”` : ''}`;
    case 'step.released': return `${nameOf(entry)} released by ${entry.actor}${d.had_by !== entry.actor ? ` for ${d.had_by}` : ''}: nobody has it${d.note ? `, note: “${d.note}”` : ''}`;
    case 'step.taken_over': return `${nameOf(entry)} taken over by ${entry.actor} from ${d.from}: “${d.note}”`;
    case 'step.hold_lapsed': return `${nameOf(entry)}: ${person(d.had_by)}'s hold (since ${timeOfDay(d.had_since)}) lapsed unanswered; nobody has it`;
    case 'run.phase': return `Phase ${d.phase} “${d.name}” began${endedBy(d.ended_by)}`;
    case 'run.phase_skipped': return `Phase ${d.phase} “${d.name}” passed over (${d.cause})`;
    case 'run.overlap': return `Overlap (${d.policy}): ${d.decided.replace('_', ' ')}: ${d.cause}`;
    case 'run.signal': return `Signal ${d.name} from ${d.by}: ${effectWords(d.effect, `phase ${entry.phase ?? '?'}`)}`;
    case 'run.advance': return `Phase ${d.phase} advanced by ${entry.actor}${d.reason ? ` reason: “${d.reason}”` : ''}: ${d.skipped_steps} steps skipped${d.resumed ? ', run resumed' : ''}`;
    case 'step.dispatch': return `${nameOf(entry)} dispatched, ${attemptWords(d)}`;
    case 'step.reminder': return `${nameOf(entry)}: reminder ${d.n} of ${d.of} ${sent(d)}`;
    case 'step.escalated': return `${nameOf(entry)}: escalated${try_(d)} ${sent(d)}`;
    case 'run.escalated': return `Run's wait for ${wordOf('waiting_for', d.waiting_for)?.label ?? d.waiting_for} escalated${try_(d)} ${sent(d)}`;
    case 'notice.failed': return failedWords(entry, nameOf);
    case 'chat.pressed': return `${nameOf(entry)}: ${d.control} pressed in chat by ${person(entry.actor)}`;
    case 'chat.edit_failed': return `${nameOf(entry)}: its chat message could not be edited: ${d.error}${d.again_at ? `; tried again at ${timeOfDay(d.again_at)}` : '; not tried again'}`;
    case 'run.postponed': return `Run postponed ${fromTo(d)} ${said(d)}`.trim();
    case 'run.upgraded': return `Run upgraded from version ${d.from} to version ${d.to} ${said(d)}`.trim();
    case 'run.deadline_moved': return `Phase ${d.phase}'s deadline moved ${moved(d.seconds)}, ${fromTo(d)} ${said(d)}`.trim();
    case 'step.timeout_moved': return `${nameOf(entry)}: its timeout moved ${moved(d.seconds)}, ${fromTo(d)} ${said(d)}`.trim();
    case 'run.late_cleanup': return lateCleanupWords(d);
    case 'run.cleanup': return `Cleanup began: ${d.reverts} ${d.reverts === 1 ? 'thing' : 'things'} to revert, newest first, in phase ${d.phase}`;
    default: return `${entry.kind}${detailWords(d)}`;
  }
}

// A row of a kind this console has no words for yet: its detail as "name value" pairs, never as JSON.
function detailWords(detail) {
  const pairs = Object.entries(detail).filter(([, value]) => value !== null && value !== undefined && typeof value !== 'object');
  return pairs.length ? `: ${pairs.map(([name, value]) => `${name.replace(/_/g, ' ')} ${value}`).join(', ')}` : '';
}

export const byPerson = (entry) => !ENGINE_ACTORS.has(entry.actor) && entry.actor !== 'game';

// Whether a row tells of something going wrong: an answer from the game carrying an error (failed, refused,
// or to be tried again; the status row that answer wrote joins its line, so the line shows as one), or a
// reminder or escalation that could not be posted.
export const isError = (entry) => Boolean(entry.detail?.error);

const KEEP = {
  all: () => true,
  people: byPerson,
  engine: (entry) => ENGINE_ACTORS.has(entry.actor),
  errors: isError,
};

// Lines from rows: a step.status row the engine wrote for a step whose dispatch is the line before it
// (that answer's outcome) joins that line instead of making its own.
function lines(entries, nameOf, person) {
  const out = [];
  for (const entry of entries) {
    const last = out[out.length - 1];
    const d = entry.detail || {};
    if (entry.kind === 'step.status' && !d.control && last?.rows.length === 1 && last.rows[0].kind === 'step.dispatch'
        && last.rows[0].step_id === entry.step_id) {
      last.rows.push(entry);
      last.text += ` → ${d.to}${d.cause && !last.text.includes(d.cause) ? ` (${d.cause})` : ''}`;
      continue;
    }
    out.push({ rows: [entry], text: describeEntry(entry, nameOf, person) });
  }
  return out;
}

// The log shows its newest LOG_SHOWN lines, and as many more as the person asks for (a press adds LOG_SHOWN): a
// run of thousands of steps has tens of thousands of rows, and drawing them all on each change kept the browser busy.
export const LOG_SHOWN = 500;

export function logView() {
  let filter = 'all';
  let following = true;
  let most = LOG_SHOWN; // how many of the newest lines are drawn
  let shown = { entries: [], nameOf: (entry) => `step id ${entry.step_id}`, people: {} };
  const list = el('ol', { id: 'run-log', class: 'log' });
  // A region (a label on a plain div is not read by most screen readers): focused (Tab, or `l`), it says what it is.
  const box = el('div', { class: 'log-box', id: 'log-box', tabindex: '0', role: 'region', 'aria-label': 'Run log, newest at the bottom' }, list);
  const followNote = el('p', { id: 'log-following', class: 'muted', 'aria-live': 'polite' });
  const newest = el('button', { type: 'button', id: 'log-newest', hidden: true, onclick: () => { following = true; render(); } }, 'Show the newest rows');
  const earlier = el('button', {
    type: 'button', class: 'secondary', id: 'log-earlier', hidden: true,
    onclick: () => {
      most += LOG_SHOWN;
      following = false; // the person is reading back: the rows they asked for stay in view
      render();
      box.scrollTop = 0;
    },
  }, `Show ${LOG_SHOWN} earlier lines`);
  const counted = el('p', { id: 'log-counted', class: 'muted' });
  box.addEventListener('scroll', () => {
    following = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
    newest.hidden = following;
    followNote.textContent = following ? 'Following the newest rows.' : 'Not following: you scrolled up.';
  });
  const choices = el('fieldset', { class: 'log-filters' }, el('legend', {}, 'Show'),
    FILTERS.map(([value, label]) => el('label', { class: 'choice' },
      el('input', {
        type: 'radio', name: 'log-filter', value, checked: value === filter,
        onchange: () => { filter = value; render(); },
      }), ` ${label}`)));

  function render() {
    const keep = KEEP[filter];
    const person = (actor) => shown.people[actor] ?? actor;
    const kept = lines(shown.entries, shown.nameOf, person).filter((line) => line.rows.some(keep));
    const drawn = kept.slice(-most);
    earlier.hidden = drawn.length === kept.length;
    counted.textContent = earlier.hidden ? '' : `Showing the newest ${drawn.length} of ${kept.length} lines.`;
    list.replaceChildren(...drawn.map(({ rows, text }) => {
      const [first] = rows;
      return el('li', {
        'data-kind': rows.map((row) => row.kind).join(' '), 'data-actor': first.actor || '',
        class: rows.some(isError) ? 'log-error' : null,
      }, when(first.created_at), ' ', el('span', { class: 'actor' }, first.actor ? person(first.actor) : 'engine'), ' ', el('span', {}, text));
    }));
    if (following) box.scrollTop = box.scrollHeight;
    newest.hidden = following;
    followNote.textContent = following ? 'Following the newest rows.' : 'Not following: you scrolled up.';
  }

  return {
    node: el('div', {}, choices, counted, el('div', { class: 'buttons' }, earlier), box, el('div', { class: 'buttons' }, newest), followNote),
    // The whole log so far, how to name its steps, and who its chat identities are (the `people` of every log
    // page read, merged); re-rendered only when a row was added or a name changed.
    show(entries, nameOf, people) {
      shown = { entries, nameOf, people };
      render();
    },
  };
}
