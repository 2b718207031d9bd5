// @ts-check
// The definition editor: a document as forms — the event's own fields, each phase with its advance condition
// and steps, the ending's steps — with steps and phases added, moved and removed, and the same document as
// JSON one tab away. Both tabs edit one object: the form writes only the keys it shows, so a key it does not
// know is kept as written, and form → JSON → form gives the same document. Every change, from either tab,
// fires one `documentchange` event on the editor (detail: `document`, or null with the `problem` while the
// JSON tab's text does not parse), so anything shown beside it (a timeline) follows either tab.
//
// The fields come from the API: the document's schema from GET /openapi.json (the body of POST /definitions),
// each action's params from GET /actions. The API's problems on save name paths ("document.phases[0].steps[1]
// .params.seconds"): each is said in words ("Phase 1 · step 2 (core.wait) · Wait (seconds) must be …", the
// JSON path in a hint), shows beside the nearest field or group of that path, and is listed at the top, a
// mapped one with a button that goes to its field; focus goes to the first field with a problem. A refusal
// that names no path (a name another definition holds) is given its path by the caller. A `core.wait` that
// ends its phase or the ending holds nothing (docs/definitions.md): the form warns beside it.

import { get } from './api.js';
import { field, fieldsOf, freshId, within } from './editor_fields.js';
import { el, focus } from './ui.js';

/** @type {Promise<{ documentSchema: any, actions: any[], moduleActions: string[] | null }> | null} */
let schemas = null;

// The document's schema and the action catalogue, once per page: both are the API's own.
function loadSchemas() {
  if (!schemas) {
    schemas = Promise.all([get('/openapi.json'), get('/actions')]).then(([openapi, { actions, module_actions }]) => ({
      documentSchema: openapi.paths['/definitions'].post.requestBody.content['application/json'].schema,
      actions,
      moduleActions: module_actions,
    }));
    schemas.catch(() => { schemas = null; });
  }
  return schemas;
}

const ENDING = 'ending'; // the document's key for the steps after the last phase
const PROBLEM_PATH = /\bdocument((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)/;
const PROBLEM_PATHS = /\bdocument((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])+)/g;
const LAST_PART = /(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])$/;
export const WAIT_ENDS_PHASE = 'This wait ends its phase, so it holds nothing: the run goes on at once. Put it before the step it should hold back.';

// The path a problem names, without its `document.` ("phases[0].steps[1].params"); '' for the document itself.
function pathOf(message) {
  const found = PROBLEM_PATH.exec(message);
  return found ? found[1].replace(/^\./, '') : '';
}

function moved(list, index, by) {
  const [item] = list.splice(index, 1);
  list.splice(index + by, 0, item);
}

/**
 * The editor for `initial` (copied: the caller's object is never changed).
 * @param {Record<string, any>} initial
 */
export function documentEditor(initial) {
  let doc = structuredClone(initial);
  /** @type {Map<string, import('./editor_fields.js').FieldPlace>} */
  const places = new Map();
  const unreadable = new Map();
  let catalogue = null; // { documentSchema, actions } once loaded

  const node = el('div', { class: 'doc-editor' });
  const problems = el('ul', { id: 'problems', class: 'problems' });
  const problemsNone = el('p', { class: 'muted', id: 'problems-none' }, 'None found yet: save to check.');
  const problemsBox = el('section', { class: 'problems-box', id: 'problems-box', 'aria-labelledby': 'problems-title', 'aria-live': 'polite' },
    el('h2', { id: 'problems-title', tabindex: '-1' }, 'Problems'), problemsNone, problems);
  const formPanel = el('div', { id: 'panel-form', role: 'tabpanel', 'aria-labelledby': 'tab-form', class: 'form-panel' },
    el('p', { class: 'muted' }, 'Loading the form…'));
  const text = el('textarea', { id: 'document', rows: '24', spellcheck: 'false' });
  const textProblem = el('p', { id: 'document-problem', class: 'field-problem', hidden: true });
  const jsonPanel = el('div', { id: 'panel-json', role: 'tabpanel', 'aria-labelledby': 'tab-json', hidden: true },
    el('label', { for: 'document' }, 'Document (JSON)'), text, textProblem);
  const tabs = {
    form: el('button', { type: 'button', role: 'tab', id: 'tab-form', 'aria-controls': 'panel-form', 'aria-selected': 'true' }, 'Form'),
    json: el('button', { type: 'button', role: 'tab', id: 'tab-json', 'aria-controls': 'panel-json', 'aria-selected': 'false', tabindex: '-1' }, 'JSON'),
  };
  const showing = () => (jsonPanel.hidden ? 'form' : 'json');

  const changed = () => {
    if (showing() === 'form') text.value = JSON.stringify(doc, null, 2);
    node.dispatchEvent(new CustomEvent('documentchange', { detail: { document: doc } }));
  };

  // The JSON tab's text as the document; null (and why, beside it) while it does not parse to an object.
  const readText = () => {
    try {
      const parsed = JSON.parse(text.value);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
        textProblem.hidden = true;
        return parsed;
      }
      textProblem.textContent = 'The document must be a JSON object ({ … }).';
    } catch (error) {
      textProblem.textContent = `The document is not valid JSON: ${error.message}`;
    }
    textProblem.hidden = false;
    return null;
  };
  text.addEventListener('input', () => {
    const parsed = readText();
    if (parsed === null) {
      node.dispatchEvent(new CustomEvent('documentchange', { detail: { document: null, problem: textProblem.textContent } }));
      return;
    }
    doc = parsed;
    changed();
  });

  /** @type {import('./editor_fields.js').FieldContext} */
  const ctx = { register: (path, place) => places.set(path, place), changed, unreadable, where: '' };
  const at = (where) => ({ ...ctx, where });
  // After a change of shape (a step added, moved or removed) the form is drawn again, and focus goes back
  // to what the person pressed, where it now is (the first of `selectors` that can take it: a step moved to
  // the top has no "Move up" any more).
  const reshaped = (...selectors) => {
    renderForm();
    changed();
    const targets = selectors.map((selector) => /** @type {HTMLButtonElement} */ (formPanel.querySelector(selector)));
    focus(targets.find((target) => target && !target.disabled));
  };

  const actionSpec = (id) => catalogue.actions.find((a) => a.id === id) || catalogue.actions.find((a) => !a.core);
  const newStep = () => ({ action: catalogue.actions[0].id });

  function stepForm(step, steps, index, path, phaseLabel, stepSchema) {
    const spec = actionSpec(step.action);
    const name = `${phaseLabel} · step ${index + 1} (${step.action})`;
    const actionId = freshId('action');
    const choice = el('select', { id: actionId, 'aria-describedby': `${actionId}-help`, 'data-step-action': path },
      catalogue.actions.map((a) => el('option', { value: a.id, selected: a === spec }, a.core ? a.id : 'module.name: an action of the game')));
    choice.addEventListener('change', () => {
      const chosen = actionSpec(choice.value);
      step.action = chosen.core ? chosen.id : '';
      delete step.params;
      reshaped(`[data-step-action="${path}"]`);
    });
    // A core action's problems show under its choice; a module action's under the id typed for it.
    const actionProblem = el('p', { class: 'field-problem', hidden: true });
    const parts = [
      el('div', { class: 'field', 'data-path': spec.core ? `${path}.action` : null },
        el('label', { for: actionId }, 'Action'), choice,
        el('p', { class: 'field-help', id: `${actionId}-help` }, spec.description), spec.core ? actionProblem : null),
    ];
    if (spec.core) {
      places.set(`${path}.action`, { node: parts[0], focusable: choice, problem: actionProblem, words: within(name, 'Action') });
    } else {
      // The game bridge's declared actions are the only ones a save accepts: a choice among them, when declared.
      const declared = catalogue.moduleActions;
      const moduleSchema = declared
        ? { type: 'string', enum: declared, description: 'One of the module actions the game bridge declares (EVENT_MODULE_ACTIONS).' }
        : { type: 'string', description: 'The module action, module.name (e.g. world.spawn), sent to the game bridge.' };
      parts.push(field(step, 'action', moduleSchema, `${path}.action`, at(name), { required: true, label: 'Module action' }));
    }
    const paramsSchema = spec.core ? spec.params_schema : { ...spec.params_schema, description: 'Any JSON object: the game side checks it.' };
    parts.push(field(step, 'params', paramsSchema, `${path}.params`, at(name),
      { label: spec.core ? `Params of ${spec.id}` : 'Params (a JSON object)', where: name }));
    // A field the action has no use for is not offered (a save refuses it), unless the step has it: then it shows,
    // with the save's reason beside it, to be taken out.
    const refused = (spec.step_fields_refused || []).filter((f) => !(f in step));
    parts.push(...fieldsOf(step, stepSchema, path, at(name), ['action', 'params', ...refused]));
    const move = (by) => {
      moved(steps, index, by);
      const now = `[data-step-path="${path.replace(/\d+\]$/, `${index + by}]`)}"]`;
      reshaped(`${now} [data-move="${by}"]`, `${now} [data-move="${-by}"]`);
    };
    const remove = () => { steps.splice(index, 1); reshaped(`[data-steps-of="${path.replace(/\[\d+\]$/, '')}"] [data-add-step]`); };
    const legendId = freshId('step');
    const box = el('fieldset', { class: 'step-form', 'data-step-path': path, 'aria-labelledby': legendId },
      el('legend', { id: legendId }, name),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', 'data-move': '-1', disabled: index === 0, 'aria-label': `Move ${name} up`, onclick: () => move(-1) }, 'Move up'),
        el('button', { type: 'button', 'data-move': '1', disabled: index === steps.length - 1, 'aria-label': `Move ${name} down`, onclick: () => move(1) }, 'Move down'),
        el('button', { type: 'button', class: 'danger', 'data-remove-step': path, 'aria-label': `Remove ${name}`, onclick: remove }, 'Remove')),
      parts);
    const problem = el('p', { class: 'field-problem', hidden: true });
    box.insertBefore(problem, box.children[1]);
    if (step.action === 'core.wait' && index === steps.length - 1) {
      box.insertBefore(el('p', { class: 'field-warning', 'data-warning': 'wait_ends_phase' }, `⚠ ${WAIT_ENDS_PHASE}`), problem);
    }
    places.set(path, { node: box, focusable: choice, problem, words: name });
    return box;
  }

  // A list of steps (a phase's or the ending's) and its "Add a step" button.
  function stepsForm(owner, key, path, phaseLabel, stepSchema, what, words) {
    const steps = Array.isArray(owner[key]) ? owner[key] : []; // written into the document with its first step
    const problem = el('p', { class: 'field-problem', hidden: true });
    const add = el('button', {
      type: 'button', 'data-add-step': path,
      onclick: () => { steps.push(newStep()); owner[key] = steps; reshaped(`[data-step-path="${path}[${steps.length - 1}]"] select`); },
    }, `Add a step to ${what}`);
    const list = el('div', { class: 'steps-form', 'data-steps-of': path }, problem,
      steps.map((step, index) => stepForm(step, steps, index, `${path}[${index}]`, phaseLabel, stepSchema)), add);
    places.set(path, { node: list, focusable: add, problem, words });
    return list;
  }

  function phaseForm(phase, phases, index, phaseSchema) {
    const path = `phases[${index}]`;
    const name = `Phase ${index + 1}${phase.name ? ` (${phase.name})` : ''}`;
    const move = (by) => {
      moved(phases, index, by);
      const now = `[data-phase-path="phases[${index + by}]"] > .buttons`;
      reshaped(`${now} [data-move="${by}"]`, `${now} [data-move="${-by}"]`);
    };
    const problem = el('p', { class: 'field-problem', hidden: true });
    const headingId = freshId('phase');
    const box = el('section', { class: 'phase-form', 'data-phase-path': path, 'aria-labelledby': headingId },
      el('h3', { id: headingId }, name),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', 'data-move': '-1', disabled: index === 0, 'aria-label': `Move ${name} up`, onclick: () => move(-1) }, 'Move phase up'),
        el('button', { type: 'button', 'data-move': '1', disabled: index + 1 === phases.length, 'aria-label': `Move ${name} down`, onclick: () => move(1) }, 'Move phase down'),
        el('button', { type: 'button', class: 'danger', 'aria-label': `Remove ${name}`, onclick: () => { phases.splice(index, 1); reshaped('[data-add-phase]'); } }, 'Remove phase')),
      problem,
      fieldsOf(phase, phaseSchema, path, at(name), ['steps']),
      stepsForm(phase, 'steps', `${path}.steps`, `Phase ${index + 1}`, phaseSchema.properties.steps.items, `phase ${index + 1}`,
        within(name, 'Steps')));
    places.set(path, { node: box, focusable: box.querySelector('input, select, textarea'), problem, words: name });
    return box;
  }

  function renderForm() {
    places.clear();
    unreadable.clear();
    const schema = catalogue.documentSchema;
    const phaseSchema = schema.properties.phases.items;
    const phases = Array.isArray(doc.phases) ? doc.phases : [];
    const addPhase = el('button', {
      type: 'button', 'data-add-phase': '',
      onclick: () => { const count = phases.push({ steps: [newStep()] }); doc.phases = phases; reshaped(`[data-phase-path="phases[${count - 1}]"] input`); },
    }, 'Add a phase');
    const phasesProblem = el('p', { class: 'field-problem', hidden: true });
    formPanel.replaceChildren(
      el('section', { class: 'event-form', 'aria-labelledby': 'event-form-title' },
        el('h3', { id: 'event-form-title' }, 'The event'),
        fieldsOf(doc, schema, '', ctx, ['phases', ENDING])),
      phasesProblem,
      ...phases.map((phase, index) => phaseForm(phase, phases, index, phaseSchema)),
      el('div', { class: 'buttons' }, addPhase),
      el('section', { class: 'phase-form', 'aria-labelledby': 'ending-form-title' },
        el('h3', { id: 'ending-form-title' }, 'Ending'),
        el('p', { class: 'field-help' }, 'Steps run after the last phase; a failure here only degrades the run.'),
        stepsForm(doc, ENDING, ENDING, 'Ending', schema.properties.ending.items, 'the ending', 'Ending')));
    places.set('phases', { node: formPanel, focusable: addPhase, problem: phasesProblem, words: 'Phases' });
  }

  const show = (which) => {
    if (which === showing()) return;
    if (which === 'form') {
      const parsed = readText();
      if (parsed === null) return focus(text);
      doc = parsed;
      if (catalogue) renderForm();
    } else {
      text.value = JSON.stringify(doc, null, 2);
      textProblem.hidden = true;
    }
    formPanel.hidden = which !== 'form';
    jsonPanel.hidden = which !== 'json';
    for (const [name, tab] of Object.entries(tabs)) {
      tab.setAttribute('aria-selected', String(name === which));
      tab.setAttribute('tabindex', name === which ? '0' : '-1');
    }
  };
  tabs.form.addEventListener('click', () => show('form'));
  tabs.json.addEventListener('click', () => show('json'));
  const tabList = el('div', { role: 'tablist', 'aria-label': 'Edit the document as', class: 'tabs' }, tabs.form, tabs.json);
  tabList.addEventListener('keydown', (event) => {
    if (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight') return;
    const next = showing() === 'form' ? 'json' : 'form';
    show(next);
    focus(tabs[next]);
  });

  // The nearest place of a path, and the path it is at ('' and null when none).
  const placeOf = (written) => {
    let path = written;
    while (path && !places.has(path)) path = path.replace(LAST_PART, '');
    return { path, place: path ? places.get(path) : null };
  };
  // A path in words: its place's ("Phase 1 · step 2 (core.wait) · Wait (seconds)"), and what is below it as
  // written ("… · Params (a JSON object) · npc"); as written when the form has no place for it.
  const pathInWords = (written) => {
    const { path, place } = placeOf(written);
    if (!place) return written;
    const below = written.slice(path.length).replace(/^\./, '').replace(/\./g, ' · ');
    return below ? within(place.words, below) : place.words;
  };
  const inWords = (message) => message.replace(PROBLEM_PATHS, (_, path) => pathInWords(path.replace(/^\./, '')));

  // The problems: each in words beside its field (or the nearest group of its path), all listed at the top
  // with their JSON paths in a hint; focus goes to the first field with one (else to the list).
  const showProblems = (messages) => {
    for (const place of places.values()) {
      place.problem.replaceChildren();
      place.problem.hidden = true;
      place.node.classList.remove('has-problem');
      place.focusable?.removeAttribute('aria-invalid');
    }
    /** @type {import('./editor_fields.js').FieldPlace | null} */
    let first = null;
    problems.replaceChildren(...messages.map((message) => {
      const written = pathOf(message);
      const { path, place } = placeOf(written);
      const words = inWords(message);
      const hint = written ? el('span', { class: 'json-name' }, ' (JSON: ', el('code', {}, `document.${written}`), ')') : '';
      if (!place) return el('li', { 'data-unmapped': '' }, words, hint);
      place.problem.append(el('span', {}, words), ' ');
      place.problem.hidden = false;
      place.node.classList.add('has-problem');
      place.focusable?.setAttribute('aria-invalid', 'true');
      first = first || place;
      return el('li', { 'data-problem-path': path }, words, hint, ' ',
        el('button', { type: 'button', class: 'link', 'aria-label': `Go to the field ${place.words}`, onclick: () => { show('form'); focus(place.focusable); } },
          'Go to the field'));
    }));
    problemsNone.hidden = messages.length > 0;
    if (first && showing() === 'form') focus(first.focusable);
    else focus(problemsBox.querySelector('h2'));
  };

  // The document to save, or null when it cannot be read (its problems are then shown).
  const read = () => {
    if (showing() === 'json') {
      const parsed = readText();
      if (parsed === null) {
        showProblems([textProblem.textContent]);
        return null;
      }
      doc = parsed;
      if (catalogue) renderForm();
    } else if (unreadable.size) {
      showProblems([...unreadable].map(([path, why]) => `document.${path}: ${why}`));
      return null;
    }
    return structuredClone(doc);
  };

  text.value = JSON.stringify(doc, null, 2);
  node.append(problemsBox, tabList, formPanel, jsonPanel);
  loadSchemas().then((loaded) => {
    catalogue = loaded;
    if (showing() === 'form') renderForm();
  }).catch((error) => {
    formPanel.replaceChildren(el('p', { role: 'alert' }, `The form could not be built (${error.message}); edit the document as JSON.`));
    show('json');
  });
  return { node, read, showProblems, inWords };
}
