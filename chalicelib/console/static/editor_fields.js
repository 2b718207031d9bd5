// @ts-check
// Form fields built from a JSON schema as the API publishes it (an action's `params_schema` from GET /actions,
// the document's from GET /openapi.json): a number input with its range, a choice for an enum, a text box,
// a group for a nested object, a JSON box for a free object or a list (a cue's choices, an only_if's values). Each field writes into the object it edits as the
// person types and removes its key when emptied, so a key the form does not know is never touched; each
// says what it takes (the schema's description and range) and has a place for the problems the API names at
// its path ("phases[0].steps[1].params.seconds"). A field is labelled in words (the schema's `title`: "Grace
// before a missed start (seconds)"), its JSON name in its hint, and its place carries those words with where
// it stands ("Phase 1 · step 2 (core.wait) · Wait (seconds)"), for the problems said in words.

import { el } from './ui.js';

/**
 * Where a path's problems show: the field or group, what to focus, the line for its problems, and its name in
 * words with where it stands.
 * @typedef {{ node: HTMLElement, focusable: HTMLElement, problem: HTMLElement, words: string }} FieldPlace
 */

/**
 * What the fields of one form share: where each registers its path (for the problems the API names there),
 * what a change calls, the free-JSON boxes whose text does not parse yet, and where the fields stand, in
 * words ("Phase 1 · step 2 (core.wait)"; '' for the event's own).
 * @typedef {{
 *   register: (path: string, place: FieldPlace) => void,
 *   changed: () => void,
 *   unreadable: Map<string, string>,
 *   where: string,
 * }} FieldContext
 */

let lastId = 0;
export const freshId = (stem) => `${stem}-${++lastId}`;

const LONG_TEXT = 500;

// A field's name in words: the schema's title, else its JSON name with its underscores as spaces.
const wordsFor = (schema, key) => schema.title || `${key.charAt(0).toUpperCase()}${key.slice(1).replace(/_/g, ' ')}`;
export const within = (where, words) => (where ? `${where} · ${words}` : words); // a string this long or longer is a text area (a message, an instruction)

const typesOf = (schema) => (Array.isArray(schema.type) ? schema.type : [schema.type]);
const isGroup = (schema) => typesOf(schema).includes('object') && schema.properties;
// Typed as JSON in a box of its own: an object whose fields the schema leaves open, or a list.
const isJson = (schema) => (typesOf(schema).includes('object') && !schema.properties) || typesOf(schema).includes('array');
const isWhole = (schema) => typesOf(schema).includes('integer');

// "0 to 604800", "at most 200 characters", "one of continue, pause, confirm": what the schema allows, in words.
function allowed(schema) {
  if (schema.enum) return `One of ${schema.enum.join(', ')}.`;
  if (typesOf(schema).includes('array')) {
    const fields = schema.items?.properties ? ` of {${Object.keys(schema.items.properties).map((k) => `"${k}": …`).join(', ')}}` : '';
    return `A JSON list${fields}${schema.maxItems !== undefined ? `, at most ${schema.maxItems}` : ''}.`;
  }
  if (schema.minimum !== undefined && schema.maximum !== undefined) return `${schema.minimum} to ${schema.maximum}.`;
  if (schema.maxLength !== undefined) return `At most ${schema.maxLength} characters.`;
  return '';
}

// The words beside a field: its description and range, its JSON name, and a place for its problems.
function helpFor(schema, id, key) {
  const described = schema.description || '';
  const words = [described && !/[.?!]$/.test(described) ? `${described}.` : described, allowed(schema)].filter(Boolean).join(' ');
  return {
    help: el('p', { class: 'field-help', id: `${id}-help` }, words, words ? ' ' : '', el('span', { class: 'json-name' }, 'JSON: ', el('code', {}, key))),
    problem: el('p', { class: 'field-problem', id: `${id}-problem`, hidden: true }),
    describedBy: `${id}-help ${id}-problem`,
  };
}

function inputFor(schema, id, value, describedBy) {
  const common = { id, 'aria-describedby': describedBy };
  if (schema.enum) {
    // A value the schema does not offer (typed on the JSON tab) is shown as it is, for the API to name.
    const stray = value !== undefined && value !== '' && !schema.enum.includes(value) ? [value] : [];
    return el('select', common, el('option', { value: '' }, '(not set)'),
      [...schema.enum, ...stray].map((choice) => el('option', { value: String(choice), selected: value === choice },
        stray.includes(choice) ? `${choice} (not one of the choices)` : choice)));
  }
  if (isWhole(schema) || typesOf(schema).includes('number')) {
    return el('input', {
      ...common, type: 'number', inputmode: 'numeric', step: isWhole(schema) ? '1' : 'any',
      min: schema.minimum ?? null, max: schema.maximum ?? null, value: value ?? '',
    });
  }
  if (isJson(schema)) {
    return el('textarea', { ...common, rows: '3', spellcheck: 'false', class: 'json' }, value === undefined ? '' : JSON.stringify(value, null, 2));
  }
  const long = (schema.maxLength ?? 0) >= LONG_TEXT;
  return long
    ? el('textarea', { ...common, rows: '2' }, value ?? '')
    : el('input', { ...common, type: 'text', value: value ?? '', spellcheck: 'false' });
}

const UNREADABLE = Symbol('unreadable');

// What an input's text means for the document: undefined removes the key. A free object's text that does not
// parse is kept aside (`unreadable`) and changes nothing until it does.
function readInput(schema, text, path, ctx) {
  ctx.unreadable.delete(path);
  if (text.trim() === '') return undefined;
  if (schema.enum) return text;
  if (isWhole(schema) || typesOf(schema).includes('number')) return Number(text);
  if (isJson(schema)) {
    try {
      return JSON.parse(text);
    } catch (error) {
      ctx.unreadable.set(path, `not JSON yet: ${error.message}`);
      return UNREADABLE;
    }
  }
  return text;
}

/**
 * One field for `key` of `target`, as `schema` says; `path` names it in the API's problems.
 * @param {Record<string, any>} target
 * @param {string} key
 * @param {any} schema
 * @param {string} path
 * @param {FieldContext} ctx
 * @param {{ required?: boolean, label?: string, where?: string }} [options] `where`: the words a group's fields
 *   stand under (default: the group's own label under the context's; a step's params: the step's name alone)
 * @returns {HTMLElement}
 */
export function field(target, key, schema, path, ctx, { required = false, label = wordsFor(schema, key), where = within(ctx.where, label) } = {}) {
  if (isGroup(schema)) return group(target, key, schema, path, ctx, label, required, where);
  const id = freshId('field');
  const { help, problem, describedBy } = helpFor(schema, id, key);
  const input = inputFor(schema, id, target[key], describedBy);
  if (required) input.setAttribute('aria-required', 'true');
  input.addEventListener(schema.enum ? 'change' : 'input', () => {
    const value = readInput(schema, /** @type {HTMLInputElement} */ (input).value, path, ctx);
    if (value === UNREADABLE) {
      problem.textContent = ctx.unreadable.get(path);
      problem.hidden = false;
      return;
    }
    problem.hidden = true;
    if (value === undefined) delete target[key];
    else target[key] = value;
    ctx.changed();
  });
  const node = el('div', { class: 'field', 'data-path': path },
    el('label', { for: id }, label, required ? ' (required)' : ''), input, help, problem);
  ctx.register(path, { node, focusable: input, problem, words: within(ctx.where, label) });
  return node;
}

// A nested object's fields in a group of their own; the object is written into `target` once one of them is
// set, and removed when the last is emptied (a `schedule: null` stays as written until then). In a group
// that may be left out, what it requires is required only once it is there, and its help says so.
function group(target, key, schema, path, ctx, label, groupRequired, where) {
  const holder = target[key] && typeof target[key] === 'object' ? target[key] : {};
  const needs = schema.required || [];
  const required = new Set(groupRequired ? needs : []);
  const optional = groupRequired ? null
    : `Optional: leave every field empty for none${needs.length ? `; once one is set, ${needs.join(' and ')} ${needs.length > 1 ? 'are' : 'is'} required` : ''}.`;
  const inner = {
    ...ctx,
    where,
    changed: () => {
      if (Object.keys(holder).length) target[key] = holder;
      else delete target[key];
      ctx.changed();
    },
  };
  const problem = el('p', { class: 'field-problem', hidden: true });
  const node = el('fieldset', { class: 'field-group', 'data-path': path },
    el('legend', {}, label),
    [schema.description, optional].filter(Boolean).map((words) => el('p', { class: 'field-help' }, words)),
    el('p', { class: 'field-help' }, el('span', { class: 'json-name' }, 'JSON: ', el('code', {}, key))),
    problem,
    Object.entries(schema.properties).map(([name, sub]) => field(holder, name, sub, `${path}.${name}`, inner, { required: required.has(name) })));
  ctx.register(path, { node, focusable: /** @type {HTMLElement} */ (node.querySelector('input, select, textarea')), problem,
    words: inner.where });
  return node;
}

// Every field of an object schema but those the caller lays out itself (`except`: phases, steps, params).
export function fieldsOf(target, schema, path, ctx, except = []) {
  const required = new Set(schema.required || []);
  return Object.entries(schema.properties || {})
    .filter(([name]) => !except.includes(name))
    .map(([name, sub]) => field(target, name, sub, path ? `${path}.${name}` : name, ctx, { required: required.has(name) }));
}
