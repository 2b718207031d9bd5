// The calendar: every definition's occurrences in a month (the viewer's zone), each with its run and skipped
// ones marked, and the runs that happened or will on a day no occurrence names (scheduled by hand); today is
// marked. Admins skip and unskip occurrences here, each button named for its run ("Skip the run of Sat 12
// Dec 20:00: …"; Skip while its run is still scheduled, even past its own time, as the API takes it). A
// postponed run shows at its new time with "postponed from …" and its old place says "postponed to …" (a link to
// the other month when it left the month: there it shows as a run "postponed from …", the API's
// `postponed_from`), and moderators postpone a scheduled run here; a paused schedule's occurrences are marked "paused by … because …", and its schedule
// paused or resumed here. And a definition's schedule in words ("every Friday at 20:00, Europe/Berlin; next:
// Fri 4 Dec, 20:00"), as GET …/occurrences says it. A definition's month is whole (every page of it the API
// answers, `next_from`: its occurrences and its runs), up to PAGES_PER_MONTH pages: past that the page says how
// many it shows and up to when, and it says so too of runs the API left out (`runs_capped`). A definition whose
// month cannot be read (its stored schedule no longer validates: a 409 saying what to do) is left out with a note
// giving the API's words and a link to its page; every other definition is shown all the same. Nothing is
// dropped without a word.

import { ApiError, get, post } from './api.js';
import { explain } from './explain.js';
import { pauseButton, pausedWords, postpone } from './plans.js';
import { pressAttrs, pressLabel } from './press.js';
import { ask, badge, el, focus, heading, notice } from './ui.js';

const MONTH = new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric' });
const TIME = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const DAY = new Intl.DateTimeFormat(undefined, { weekday: 'short' });
const MONTH_SHORT = new Intl.DateTimeFormat(undefined, { month: 'short' });
// "Sat 12 Dec 20:00": an occurrence's day and time, in the viewer's zone.
const dated = (at) => `${DAY.format(at)} ${at.getDate()} ${MONTH_SHORT.format(at)} ${TIME.format(at)}`;

const pad = (n) => String(n).padStart(2, '0');
const monthParam = (day) => `${day.getFullYear()}-${pad(day.getMonth() + 1)}`;
const dayKey = (day) => `${monthParam(day)}-${pad(day.getDate())}`;

function firstOfMonth(query) {
  const asked = /(?:^|&)month=(\d{4})-(\d{2})(?:&|$)/.exec(query || '');
  const today = new Date();
  return asked ? new Date(Number(asked[1]), Number(asked[2]) - 1, 1) : new Date(today.getFullYear(), today.getMonth(), 1);
}

// `from` a Date, or the API's own `next_from` as it wrote it: exact to the microsecond, which a Date is not.
function occurrencesPath(definitionId, from, to) {
  const edge = (at) => encodeURIComponent(typeof at === 'string' ? at : at.toISOString());
  return `/definitions/${definitionId}/occurrences?from=${edge(from)}&to=${edge(to)}`;
}

// The most pages of one definition's month is read in (the API answers at most 500 occurrences and 500 runs a
// page): an hourly schedule's month (744) is whole, and so are 13 events of 50 runs scheduled by hand; a more
// frequent one's stops after two pages and says so. A month page of thousands of entries a person cannot read,
// and the browser lays out slowly, helps nobody.
const PAGES_PER_MONTH = 2;

// One definition's occurrences of [first, next), every page of them (`next_from`) up to PAGES_PER_MONTH; its runs
// no occurrence names, each once (a later page's occurrence may name a run an earlier page listed alone);
// `capped`: whether the month was left unread from `next_from` on; and `runsLeftOut`: the moments whose runs the
// API left out (`runs_capped`: more at one moment than a page holds, the moment just before its `next_from`).
async function monthOf(definitionId, first, next) {
  const answer = await get(occurrencesPath(definitionId, first, next));
  const occurrences = [...answer.occurrences];
  const runs = new Map((answer.runs || []).map((run) => [run.id, run]));
  const runsLeftOut = answer.runs_capped ? [answer.next_from] : [];
  let from = answer.next_from;
  for (let pages = 1; from && pages < PAGES_PER_MONTH; pages += 1) {
    const more = await get(occurrencesPath(definitionId, from, next));
    occurrences.push(...more.occurrences);
    for (const run of more.runs || []) runs.set(run.id, run);
    if (more.runs_capped) runsLeftOut.push(more.next_from);
    from = more.next_from;
  }
  const named = new Set(occurrences.filter((o) => o.run).map((o) => o.run.id));
  return { ...answer, occurrences, runs: [...runs.values()].filter((run) => !named.has(run.id)), next_from: from,
    capped: Boolean(from), runsLeftOut };
}

// "1000 occurrences", "12 runs", "998 occurrences and 2 runs": what a month shows of a definition.
const counted = (answer) => [[answer.occurrences.length, 'occurrences'], [answer.runs.length, 'runs']]
  .filter(([n]) => n).map(([n, what]) => `${n} ${what}`).join(' and ');

// What a month read short of a definition says: "Showing the first 1000 occurrences of Tick this month; the rest,
// from Sat 12 Dec 20:00 on, are left out.", and of runs the API left out at a moment: "Runs of Quiz night at Sat 12
// Dec 20:00 are left out: more are scheduled for that moment than the calendar reads."
const cappedNotes = (listed) => listed.flatMap(({ definition, answer }) => [
  ...(answer.capped ? [el('p', { class: 'calendar-capped', 'data-capped': definition.id },
    `Showing the first ${counted(answer)} of ${definition.name} this month; the rest, from`
    + ` ${dated(new Date(answer.next_from))} on, are left out.`)] : []),
  ...answer.runsLeftOut.map((at) => el('p', { class: 'calendar-capped', 'data-runs-left-out': definition.id },
    `Runs of ${definition.name} at ${dated(new Date(at))} are left out: more are scheduled for that moment than the`
    + ' calendar reads.')),
]);

// Why a definition's month could not be read: the API's own words ("definition 7's schedule ('0 0 L * *' in
// Europe/London) is not understood: …: save a version with a corrected schedule …"), or that it did not answer.
const unreadWords = (error) => (error instanceof ApiError ? error.messages.join(' ') : 'the calendar did not answer.');

// Each definition whose month could not be read, said apart, with a link to its page (where a corrected schedule
// is saved): "Quiz night is left out of this month: definition 7's schedule … Open Quiz night."
const unreadNotes = (unread) => unread.map(({ definition, error }) => el('p', { class: 'calendar-unread', 'data-unread': definition.id },
  `${definition.name} is left out of this month: ${unreadWords(error)} `,
  el('a', { href: `#/definitions/${definition.id}` }, `Open ${definition.name}`), '.'));

// A paused schedule's mark: "⏸ paused by mod-mia because holiday break".
// It carries a person's reason, of any length: it wraps (`badge-note`), where a status's badge never does.
const pausedMark = (paused, attrs = {}) => el('span', { class: 'badge badge-paused badge-note', ...attrs }, `⏸ ${pausedWords(paused)}`);

// A definition's schedule in words, for its page, with whether it is paused and the button that pauses or
// resumes it: filled in once the API answers, and again after a press.
export function scheduleInWords(definition) {
  const line = el('p', { id: 'schedule-words' });
  const buttons = el('div', { class: 'buttons', id: 'schedule-buttons' });
  const show = () => get(`/definitions/${definition.id}/occurrences`).then(({ schedule }) => {
    line.replaceChildren(...(schedule ? ['Schedule: ', schedule.in_words, ' (', el('a', { href: '#/calendar' }, 'calendar'), ')',
      ...(schedule.paused ? [' ', pausedMark(schedule.paused, { id: 'schedule-paused' })] : [])]
      : [el('span', { class: 'muted' }, 'No schedule: its runs are scheduled by hand.')]));
    buttons.replaceChildren(...(schedule ? [pauseButton({ ...definition, schedule_paused: schedule.paused }, show)] : []));
  }).catch((error) => {
    // A schedule the API cannot read (a 409 saying what to do) is said where the schedule would be.
    if (error instanceof ApiError && error.status === 409) {
      line.replaceChildren(el('span', { class: 'schedule-unreadable' }, `Schedule: ${unreadWords(error)}`));
      buttons.replaceChildren();
    } else {
      explain(error, 'Reading the schedule');
    }
  });
  show();
  return el('div', {}, line, buttons);
}

// Where a postponed run went or came from, as a badge: "postponed to Sat 12 Dec 20:00" (`attr`
// data-postponed-to) or "postponed from Mon 30 Nov 20:00" (data-postponed-from), the time a link to its month
// when that is not the month shown.
function postponedMark(words, attr, at, first) {
  const when = new Date(at);
  const other = monthParam(when) !== monthParam(first);
  return el('span', { class: 'badge badge-note', [attr]: at }, `${words} `,
    other ? el('a', { href: `#/calendar?month=${monthParam(when)}` }, dated(when)) : dated(when));
}

// An occurrence on the day it is drawn: at its run's new time if a person postponed it within the month shown
// ("postponed from …"), else at its own time (postponed out of the month: "postponed to …"). Its buttons are
// exactly what the API takes: Skip while its run is still scheduled (even past its own time: the skip cancels
// the run), or with no run while it is ahead; Unskip while a skipped one is ahead; Postpone a scheduled run.
function occurrenceItem(definition, occurrence, { admin, control, reload, first }, movedHere) {
  const at = new Date(occurrence.scheduled_for);
  const shownAt = movedHere ? occurrence.postponed_to : occurrence.scheduled_for;
  const path = `/definitions/${definition.id}/occurrences/${occurrence.scheduled_for}`;
  const item = el('li', {
    class: occurrence.skipped ? 'occurrence occurrence-skipped' : 'occurrence',
    'data-definition': definition.id, 'data-occurrence': occurrence.scheduled_for, 'data-skipped': String(occurrence.skipped),
  }, el('time', { datetime: shownAt }, TIME.format(new Date(shownAt))), ' ', definition.name);
  if (occurrence.postponed_to) {
    item.append(' ', movedHere ? postponedMark('postponed from', 'data-postponed-from', occurrence.scheduled_for, first)
      : postponedMark('postponed to', 'data-postponed-to', occurrence.postponed_to, first));
  }
  if (occurrence.paused && definition.schedule_paused) item.append(' ', pausedMark(definition.schedule_paused));
  if (occurrence.skipped) {
    const why = occurrence.skip?.reason ? `: ${occurrence.skip.reason}` : '';
    item.append(' ', el('span', { class: 'badge badge-skipped' }, `⊘ skipped${why}`));
  }
  if (occurrence.run) {
    item.append(' ', el('a', { href: `#/runs/${occurrence.run.id}` }, `run ${occurrence.run.id}`), ' ', badge(occurrence.run.status));
  }
  const ahead = at > new Date();
  const scheduled = occurrence.run?.status === 'scheduled';
  if (control && scheduled) {
    const move = async () => { if (await postpone(occurrence.run, `${definition.name} (run ${occurrence.run.id})`)) reload(); };
    const pressing = `/runs/${occurrence.run.id}/postpone`; // "Sending…" from the tap to the answer, as everywhere
    item.append(' ', el('button', {
      type: 'button', class: 'small', 'data-occurrence-action': 'postpone', onclick: move, ...pressAttrs(pressing, 'Postpone'),
    }, pressLabel(pressing, 'Postpone')));
  }
  const offered = occurrence.skipped ? ahead && (!occurrence.run || scheduled) : scheduled || (!occurrence.run && ahead);
  if (admin && offered) {
    const act = async () => {
      try {
        if (occurrence.skipped) {
          await post(`${path}/unskip`, {});
          notice(`${definition.name} on ${dated(at)} will run after all.`, 'ok');
        } else {
          const reason = await ask({ title: `Skip ${definition.name} on ${dated(at)}?`,
            label: 'Why (shown on the calendar)', action: 'Skip this occurrence' });
          if (reason === null) return;
          await post(`${path}/skip`, { reason });
          notice(`${definition.name} on ${dated(at)} is skipped${occurrence.run ? '; its run is cancelled' : ''}.`, 'ok');
        }
        reload();
      } catch (error) {
        explain(error, occurrence.skipped ? 'Unskipping' : 'Skipping');
      }
    };
    const verb = occurrence.skipped ? 'Unskip' : 'Skip';
    item.append(' ', el('button', {
      type: 'button', class: 'small', 'data-occurrence-action': verb.toLowerCase(), onclick: act,
      'aria-label': `${verb} the run of ${dated(at)}: ${definition.name}`,
    }, verb));
  }
  return item;
}

// A postponed occurrence's old place, when the month shows it at its new time too: "20:00 Quiz night postponed
// to Fri 15 Jan 22:30".
function movedAwayItem(definition, occurrence, first) {
  return el('li', { class: 'occurrence occurrence-moved', 'data-definition': definition.id, 'data-moved-from': occurrence.scheduled_for },
    el('time', { datetime: occurrence.scheduled_for }, TIME.format(new Date(occurrence.scheduled_for))), ' ', definition.name, ' ',
    postponedMark('postponed to', 'data-postponed-to', occurrence.postponed_to, first));
}

// A run no occurrence of the month names, on its day: its time, its definition, the run and its status, and
// where a person postponed it from (`postponed_from`: its occurrence's time, in another month or by hand).
function runItem(definition, run, first) {
  return el('li', { class: 'occurrence', 'data-definition': definition.id, 'data-run': run.id },
    el('time', { datetime: run.scheduled_for }, TIME.format(new Date(run.scheduled_for))), ' ', definition.name, ' ',
    ...(run.postponed_from ? [postponedMark('postponed from', 'data-postponed-from', run.postponed_from, first), ' '] : []),
    el('a', { href: `#/runs/${run.id}` }, `run ${run.id}`), ' ', badge(run.status));
}

// The weeks the month's grid draws, Monday first: from the Monday on or before the first to the Sunday after
// the last day.
function gridWeeks(first) {
  const day = new Date(first);
  day.setDate(1 - ((first.getDay() + 6) % 7)); // the Monday on or before the first
  const weeks = [];
  while (weeks.length === 0 || day.getMonth() === first.getMonth()) {
    const week = [];
    for (let i = 0; i < 7; i += 1, day.setDate(day.getDate() + 1)) week.push(new Date(day));
    weeks.push(week);
  }
  return weeks;
}

function monthGrid(first, listed, context) {
  const weeks = gridWeeks(first);
  const drawn = new Set(weeks.flat().map(dayKey));
  const byDay = new Map();
  const put = (at, when, item) => {
    const key = dayKey(new Date(at));
    if (!byDay.has(key)) byDay.set(key, []);
    byDay.get(key).push([at, when, item]);
  };
  const here = { ...context, first };
  for (const { definition, answer } of listed) {
    for (const occurrence of answer.occurrences) {
      // Postponed to a day the grid draws: there, and its old place says where it went; else at its own time.
      const movedHere = Boolean(occurrence.postponed_to) && drawn.has(dayKey(new Date(occurrence.postponed_to)));
      if (movedHere) put(occurrence.scheduled_for, definition.id, () => movedAwayItem(definition, occurrence, first));
      put(movedHere ? occurrence.postponed_to : occurrence.scheduled_for, definition.id,
        () => occurrenceItem(definition, occurrence, here, movedHere));
    }
    for (const run of answer.runs || []) put(run.scheduled_for, definition.id, () => runItem(definition, run, first));
  }
  const todayKey = dayKey(new Date());
  const rows = weeks.map((week) => el('tr', {}, week.map((day, i) => {
    const items = byDay.get(dayKey(day)) || [];
    items.sort((a, b) => a[0].localeCompare(b[0]) || a[1] - b[1]);
    const isToday = dayKey(day) === todayKey;
    return el('td', {
      class: `day${day.getMonth() === first.getMonth() ? '' : ' other-month'}${isToday ? ' today' : ''}`,
      'data-day': dayKey(day), 'aria-current': isToday ? 'date' : null,
    },
    el('div', { class: 'day-number', 'data-weekday': WEEKDAYS[i] }, String(day.getDate()),
      isToday ? el('span', { class: 'today-mark' }, ' · today') : null),
    items.length ? el('ul', { class: 'occurrences' }, items.map(([, , item]) => item())) : null);
  })));
  return el('div', { class: 'table-wrap' }, el('table', { class: 'calendar' },
    el('caption', {}, `Occurrences in ${MONTH.format(first)}, in your time zone`),
    el('thead', {}, el('tr', {}, WEEKDAYS.map((name) => el('th', { scope: 'col' }, name)))),
    el('tbody', {}, rows)));
}

// Each recurring definition's schedule, paused (by whom, why) or running, with its Pause or Resume button.
function schedulesList(recurring, control, reload) {
  return el('ul', { id: 'calendar-schedules', class: 'plain' }, recurring.map((definition) => el('li', { 'data-schedule': definition.id },
    definition.name, ...(definition.schedule_paused ? [' ', pausedMark(definition.schedule_paused)] : []),
    ...(control ? [' ', pauseButton(definition, reload)] : []))));
}

export function calendarView(main, ctx, query) {
  const first = firstOfMonth(query);
  const next = new Date(first.getFullYear(), first.getMonth() + 1, 1);
  const previous = new Date(first.getFullYear(), first.getMonth() - 1, 1);
  const grid = el('div', { id: 'calendar-month', 'aria-live': 'polite' }, el('p', { class: 'muted' }, 'Loading…'));
  main.replaceChildren(heading(1, `Calendar: ${MONTH.format(first)}`),
    el('p', { class: 'buttons' },
      el('a', { href: `#/calendar?month=${monthParam(previous)}`, id: 'calendar-previous' }, `← ${MONTH.format(previous)}`),
      el('a', { href: `#/calendar?month=${monthParam(next)}`, id: 'calendar-next' }, `${MONTH.format(next)} →`)),
    grid);
  let stopped = false;
  const load = async () => {
    try {
      const definitions = await ctx.definitions({ fresh: true });
      const recurring = definitions.filter((d) => d.schedule_cron);
      // Each definition's month on its own: one that cannot be read is said apart, never failing the others.
      const read = await Promise.allSettled(definitions.map((definition) => monthOf(definition.id, first, next)));
      if (stopped) return;
      const listed = [];
      const unread = [];
      read.forEach((result, i) => {
        if (result.status === 'fulfilled') listed.push({ definition: definitions[i], answer: result.value });
        else unread.push({ definition: definitions[i], error: result.reason });
      });
      const { may } = ctx.session();
      grid.replaceChildren(...(definitions.length ? [recurring.length ? schedulesList(recurring, may.control, load) : null,
        ...unreadNotes(unread), ...cappedNotes(listed),
        monthGrid(first, listed, { admin: may.define, control: may.control, reload: load })].filter(Boolean)
        : [el('p', {}, 'No definition yet.')]));
    } catch (error) {
      explain(error, 'Reading the calendar');
    }
  };
  load();
  focus(main.querySelector('h1'));
  return () => { stopped = true; };
}
