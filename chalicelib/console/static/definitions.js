// @ts-check
// Definitions, for admins: the list, each version's document, new documents and versions (edited in
// editor.js, the API's problems beside their fields), a duplicate as a new definition, the difference
// between two versions (diff.js), scheduling a run, and starting a dry run (a rehearsal the tick drives, at a
// speed, its module actions simulated or sent to the sandbox).

import { ApiError, get, post, put } from './api.js';
import { scheduleInWords } from './calendar.js';
import { versionsDiff } from './diff.js';
import { documentEditor } from './editor.js';
import { explain } from './explain.js';
import { timelinePanel } from './timeline.js';
import { ask, el, fill, focus, fullTime, heading, notice, table, when } from './ui.js';

const TEMPLATE = {
  name: 'New event',
  grace_seconds: 300,
  phases: [{ name: 'opening', steps: [{ action: 'core.announce', params: { message: 'The event begins!' } }] }],
};

function adminsOnly(main, ctx) {
  if (ctx.session().may.define) return false;
  main.replaceChildren(heading(1, 'Definitions'), el('p', { role: 'status' }, 'Definitions are managed by admins; your roles cannot change them.'));
  focus(main.querySelector('h1'));
  return true;
}

export function definitionsView(main, ctx) {
  if (adminsOnly(main, ctx)) return null;
  const list = el('div', { id: 'definitions-list' }, el('p', { class: 'muted' }, 'Loading…'));
  main.replaceChildren(heading(1, 'Definitions'),
    el('p', {}, el('a', { href: '#/definitions/new', class: 'button', id: 'new-definition' }, 'New definition')), list);
  ctx.definitions({ fresh: true }).then((all) => {
    const rows = all.map((d) => el('tr', { 'data-definition': d.id },
      el('td', {}, el('a', { href: `#/definitions/${d.id}` }, d.name)),
      el('td', {}, `v${d.current_version}`),
      el('td', {}, d.schedule_cron ? el('code', {}, d.schedule_cron) : el('span', { class: 'muted' }, 'none')),
      el('td', {}, when(d.updated_at))));
    list.replaceChildren(rows.length ? table('Definitions', ['Name', 'Current version', 'Schedule', 'Updated'], rows) : el('p', {}, 'No definitions yet.'));
  }).catch((error) => explain(error, 'Listing definitions'));
  focus(main.querySelector('h1'));
  return null;
}

// Beside the warning that scheduled runs keep their version: where they are listed, to be upgraded (each on its
// page, or ticked together on the list).
function keptRuns(warning, answer) {
  if (warning.code !== 'runs_keep_their_version') return null;
  return [' ', el('a', { href: `#/runs?status=scheduled&definition=${answer.definition.id}`, id: 'kept-runs' },
    'See them on the runs list, to upgrade them.')];
}

// The document editor (editor.js: forms, or JSON one tab away), its problems beside each field, and Save.
function editor(main, { titleText, initial, save, saved, definitionId = null }) {
  const edited = documentEditor(initial);
  const form = el('form', {
    class: 'editor',
    novalidate: true,
    onsubmit: async (event) => {
      event.preventDefault();
      const document = edited.read();
      if (document === null) {
        notice('The document is not valid JSON (its problem is beside the JSON box); nothing was saved.', 'error');
        return;
      }
      try {
        const answer = await save(document);
        // Saved all the same; what the API could not check, or what the save does not reach, said with it.
        const warnings = answer.warnings || [];
        if (warnings.length) {
          notice(`Saved, with ${warnings.length === 1 ? 'a warning' : `${warnings.length} warnings`}:`, 'warning',
            el('ul', { id: 'save-warnings' }, warnings.map((w) => el('li', { 'data-code': w.code }, w.message, keptRuns(w, answer)))));
        } else {
          notice('Saved.', 'ok');
        }
        saved(answer);
      } catch (error) {
        // A name another definition holds (409, naming it) is a problem of the name field, as a 400's are of theirs.
        const clash = error instanceof ApiError && error.status === 409 && error.detail.definition_id !== undefined;
        if (error instanceof ApiError && (error.status === 400 || clash)) {
          const messages = clash ? error.messages.map((message) => `document.name: ${message}`) : error.messages;
          notice(`The document has ${messages.length} problem${messages.length === 1 ? '' : 's'}; nothing was saved.`, 'error');
          edited.showProblems(messages);
        } else {
          explain(error, 'Saving');
        }
      }
    },
  },
  el('div', { class: 'editor-grid' }, edited.node, definitionId ? timelinePanel(definitionId, edited.node, initial, edited.inWords) : null),
  el('div', { class: 'buttons' }, el('button', { type: 'submit', class: 'primary', id: 'save-document' }, 'Save')));
  main.replaceChildren(heading(1, titleText), form);
  focus(main.querySelector('h1'));
}

export function newDefinitionView(main, ctx) {
  if (adminsOnly(main, ctx)) return null;
  editor(main, {
    titleText: 'New definition',
    initial: TEMPLATE,
    save: (document) => post('/definitions', document),
    saved: (answer) => { ctx.definitions({ fresh: true }); ctx.navigate(`#/definitions/${answer.definition.id}`); },
  });
  return null;
}

function scheduleForm(definition) {
  const definitionId = definition.id;
  const at = el('input', { type: 'datetime-local', id: 'schedule-at', step: '1' });
  const result = el('p', { id: 'schedule-result', role: 'status' });
  const submit = async (scheduledFor) => {
    try {
      const answer = await post(`/definitions/${definitionId}/runs`, { scheduled_for: scheduledFor });
      const run = answer.run;
      result.replaceChildren('Scheduled ', el('a', { href: `#/runs/${run.id}`, id: 'scheduled-run' }, `run ${run.id}`), ' for ', fullTime(run.scheduled_for), ' (', when(run.scheduled_for), ').');
      focus(result.querySelector('a'));
    } catch (error) {
      explain(error, 'Scheduling');
    }
  };
  // A live run begins at once: asked first, naming what will happen.
  const runNow = async () => {
    const confirmed = await ask({
      title: `Start a live run of ${definition.name} (version ${definition.current_version}) now?`,
      what: 'Its first phase begins within seconds: its steps are sent to the game and its cues to the game masters, for real.',
      action: 'Start it now',
    });
    if (confirmed !== null) await submit(new Date().toISOString());
  };
  return el('section', { 'aria-labelledby': 'schedule-title' },
    el('h2', { id: 'schedule-title' }, 'Schedule a run'),
    el('div', { class: 'buttons' },
      el('button', { type: 'button', id: 'schedule-now', onclick: runNow }, 'Run now')),
    el('form', {
      class: 'inline',
      onsubmit: (event) => {
        event.preventDefault();
        if (!at.value) return notice('Choose a date and time first.', 'error');
        return submit(new Date(at.value).toISOString()); // the input is in the viewer's zone
      },
    },
    el('label', { for: 'schedule-at' }, 'At (your local time)'), at,
    el('button', { type: 'submit', id: 'schedule-at-submit' }, 'Schedule')),
    result);
}

function dryRunForm(definition, ctx) {
  const speed = el('input', { type: 'number', id: 'dry-run-speed', min: '1', max: '600', step: '1', value: '60', required: true });
  const bridge = el('select', { id: 'dry-run-bridge' },
    el('option', { value: 'simulate' }, 'simulated (no game server)'), el('option', { value: 'sandbox' }, 'the sandbox game server'));
  const confirmAfter = el('input', { type: 'number', id: 'dry-run-confirm', min: '0', max: '86400', step: '1', value: '10' });
  return el('section', { 'aria-labelledby': 'dry-run-title' },
    el('h2', { id: 'dry-run-title' }, 'Rehearse it: a dry run'),
    el('p', { class: 'muted' }, 'It runs now, faster, and reaches neither the live game nor the live channels; a cue nobody'
      + ' confirms is confirmed for you.'),
    el('form', {
      class: 'inline',
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const answer = await post(`/definitions/${definition.id}/dry-runs`, {
            speed: Number(speed.value), bridge: bridge.value, auto_confirm_seconds: Number(confirmAfter.value),
          });
          notice(`Dry run ${answer.run.id} started.`, 'ok');
          ctx.navigate(`#/runs/${answer.run.id}`);
        } catch (error) {
          explain(error, 'Starting the dry run');
        }
      },
    },
    el('label', { for: 'dry-run-speed' }, 'Speed (times faster, 1–600)'), speed,
    el('label', { for: 'dry-run-bridge' }, 'Module actions go to'), bridge,
    el('label', { for: 'dry-run-confirm' }, 'Confirm a cue after (seconds)'), confirmAfter,
    el('button', { type: 'submit', id: 'dry-run-start' }, 'Start a dry run')));
}

export function definitionView(main, ctx, idText) {
  if (adminsOnly(main, ctx)) return null;
  const definitionId = Number(idText);
  const documentBox = el('section', { id: 'version-document', 'aria-live': 'polite' });
  main.replaceChildren(heading(1, `Definition ${definitionId}`), el('p', { class: 'muted' }, 'Loading…'));

  const viewVersion = async (version) => {
    try {
      const document = await ctx.versionDocument(definitionId, version);
      documentBox.replaceChildren(el('h2', { tabindex: '-1' }, `Version ${version}`), el('pre', { class: 'document' }, JSON.stringify(document, null, 2)));
      focus(documentBox.querySelector('h2'));
    } catch (error) {
      explain(error, 'Reading that version');
    }
  };

  get(`/definitions/${definitionId}`).then(({ definition, versions }) => {
    const rows = versions.map((v) => el('tr', { 'data-version': v.version },
      el('td', {}, `v${v.version}`),
      el('td', {}, v.created_by || ''),
      el('td', {}, when(v.created_at)),
      el('td', {}, el('button', { type: 'button', 'data-view-version': v.version, onclick: () => viewVersion(v.version) }, `View version ${v.version}`))));
    const addVersion = async () => {
      try {
        const current = await ctx.versionDocument(definitionId, definition.current_version);
        editor(main, {
          titleText: `New version of ${definition.name}`,
          initial: current,
          save: (document) => put(`/definitions/${definitionId}`, document),
          saved: () => { ctx.definitions({ fresh: true }); definitionView(main, ctx, String(definitionId)); },
          definitionId,
        });
      } catch (error) {
        explain(error, 'Reading the current version');
      }
    };
    const duplicate = async () => {
      try {
        const current = await ctx.versionDocument(definitionId, definition.current_version);
        editor(main, {
          titleText: `New definition, from ${definition.name}`,
          initial: { ...current, name: `${definition.name} (copy)` },
          save: (document) => post('/definitions', document),
          saved: (answer) => { ctx.definitions({ fresh: true }); ctx.navigate(`#/definitions/${answer.definition.id}`); },
        });
      } catch (error) {
        explain(error, 'Reading the current version');
      }
    };
    fill(main,
      el('p', {}, el('a', { href: '#/definitions' }, '← All definitions')),
      heading(1, definition.name),
      el('p', {}, `Current version ${definition.current_version}`, definition.schedule_cron ? ['; schedule ', el('code', {}, definition.schedule_cron)] : '', '. ',
        el('a', { href: `#/runs?definition=${definitionId}` }, 'Its runs')),
      scheduleInWords(definition),
      el('div', { class: 'buttons' }, el('button', { type: 'button', id: 'add-version', onclick: addVersion }, 'Add a version'),
        el('button', { type: 'button', id: 'duplicate-definition', onclick: duplicate }, 'Duplicate as a new definition')),
      scheduleForm(definition),
      dryRunForm(definition, ctx),
      el('section', { 'aria-labelledby': 'versions-title' }, el('h2', { id: 'versions-title' }, 'Versions'),
        table('Versions, oldest first', ['Version', 'By', 'Saved', 'Document'], rows)),
      documentBox,
      versionsDiff(versions.map((v) => v.version), (version) => ctx.versionDocument(definitionId, version)));
    focus(main.querySelector('h1'));
  }).catch((error) => explain(error, 'Reading the definition'));
  return null;
}
