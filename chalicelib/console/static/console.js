// @ts-check
// The console's start: settings, sign-in, the header, and which view the address shows.
//
// Views are functions (main, ctx, ...match) that render into <main> and return a
// function that stops them (their pollers), called when the address changes.

import { ApiError, call, configure, get } from './api.js';
import { listenForShortcuts } from './keys.js';
import { refreshNeedYou } from './poll.js';
import { runView } from './run.js';
import { runsView } from './runs.js';
import {
  checkToken, expiresAt, finishOidc, forgetToken, startOidc, storedToken, storeToken,
} from './signin.js';
import {
  closeQuestions, el, focus, heading, needYou, notice, pageTitle, say, sayState, showUnsent, takeUnsent, unsent, useVocabulary,
} from './ui.js';

const main = document.getElementById('main');
const state = { config: { oidc: null, dev_logins: [] }, session: null, stop: null, expiryTimer: null, definitions: null, carryNotice: false };

// The authoring views (definitions, their editor, the calendar: about 55 kB) load when first opened, so that the
// run page, the one opened at 2 a.m., carries none of them (a test holds it under 200 kB).
function later(load) {
  return (into, given, ...match) => {
    let stop = null;
    let left = false;
    into.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
    load().then(
      (view) => { if (!left) stop = view(into, given, ...match); },
      (error) => { if (!left) into.replaceChildren(heading(1, 'This page could not load'), el('p', { role: 'alert' }, String(error.message || error))); },
    );
    return () => { left = true; if (stop) stop(); };
  };
}
const authoring = () => import('./definitions.js');
const newDefinitionView = later(() => authoring().then((m) => m.newDefinitionView));
const definitionView = later(() => authoring().then((m) => m.definitionView));
const definitionsView = later(() => authoring().then((m) => m.definitionsView));
const calendarView = later(() => import('./calendar.js').then((m) => m.calendarView));

/** @type {Array<[RegExp, (main: HTMLElement, ctx: object, ...match: string[]) => (() => void) | null]>} */
const ROUTES = [
  [/^#\/runs\/(\d+)$/, runView],
  [/^#\/definitions\/new$/, newDefinitionView],
  [/^#\/definitions\/(\d+)$/, definitionView],
  [/^#\/definitions$/, definitionsView],
  [/^#\/calendar(?:\?(.*))?$/, calendarView],
  [/^#\/runs(?:\?(.*))?$/, runsView],
];

// Every definition (all pages), once per sign-in: the runs list and run page show names, not ids.
function definitions({ fresh = false } = {}) {
  if (!state.definitions || fresh) {
    state.definitions = (async () => {
      const all = [];
      let cursor = null;
      do {
        const page = await get(`/definitions?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        all.push(...page.definitions);
        cursor = page.next_cursor ?? null;
      } while (cursor && all.length < 5000);
      return all;
    })();
    state.definitions.catch(() => { state.definitions = null; });
  }
  return state.definitions;
}

// One version's document (a definition lists its versions without them).
async function versionDocument(definitionId, version) {
  return (await get(`/definitions/${definitionId}/versions/${version}`)).version.document;
}

// A view's own move to another page (a dry run started, a definition saved) carries its notice there; any other
// change of address (a link, the back button, a shortcut) leaves it behind with the page it was made on.
const ctx = {
  definitions, versionDocument, session: () => state.session,
  navigate: (hash) => { state.carryNotice = location.hash !== hash; location.hash = hash; },
};

function route() {
  if (!state.session) return;
  if (state.stop) state.stop();
  state.stop = null;
  const hash = location.hash && location.hash !== '#' ? location.hash : '#/runs';
  for (const [pattern, view] of ROUTES) {
    const match = pattern.exec(hash);
    if (match) {
      if (!state.carryNotice) notice(''); // a notice belongs to the page it was made on
      state.carryNotice = false;
      pageTitle('Event runs');
      state.stop = view(main, ctx, ...match.slice(1));
      if (view !== runView && view !== runsView) refreshNeedYou(); // pages that poll read it with each poll
      return;
    }
  }
  main.replaceChildren(heading(1, 'Not found'), el('p', {}, 'Nothing lives at this address. ', el('a', { href: '#/runs' }, 'See the runs.')));
}

function showHeader() {
  const { session } = state;
  document.getElementById('nav').hidden = !session;
  document.getElementById('nav-definitions').hidden = !session?.may.define;
  if (!session) needYou(0);
  const who = document.getElementById('who');
  who.replaceChildren();
  if (session) {
    who.append(
      el('span', { id: 'signed-in-as' }, `Signed in as ${session.sub} (${session.roles.join(', ') || 'no role'})`),
      ' ',
      el('button', { type: 'button', id: 'sign-out', onclick: () => signOut('You have signed out.') }, 'Sign out'),
    );
  }
}

// A question left open would stay on top of the sign-in page (and, answered, send with no token): each is called
// off, and what it asked and what was typed in it said on the sign-in page.
function signOut(reason, kind = 'info') {
  for (const { title, typed } of closeQuestions()) {
    unsent(`Not sent: “${title}” (the dialog was open when your sign-in ended).`
      + `${typed.length ? ` What you typed: ${typed.map((text) => `“${text}”`).join(', ')}.` : ''}`);
  }
  forgetToken();
  clearTimeout(state.expiryTimer);
  if (state.stop) state.stop();
  state.stop = null;
  state.session = null;
  state.definitions = null;
  showHeader();
  say('connection', '');
  notice('');
  signInView(reason, kind);
}

async function signIn(token) {
  storeToken(token);
  try {
    state.session = await checkToken();
  } catch (error) {
    forgetToken();
    const why = error instanceof ApiError ? error.messages.join(' ') : String(error.message || error);
    signInView(`That token was not accepted: ${why}`, 'error');
    return;
  }
  // The statuses' words and marks and the declared controls: the console keeps no list of its own.
  let vocabularyProblem = '';
  try {
    useVocabulary(await get('/vocabulary'));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return;
    vocabularyProblem = `The statuses' names could not be loaded (${error.message}); controls show by name only.`;
  }
  clearTimeout(state.expiryTimer);
  const expires = expiresAt(token);
  if (expires !== null) {
    const expired = () => signOut(`Your sign-in expired at ${new Date(expires).toLocaleTimeString()}. Sign in again.`, 'warning');
    // Timers cannot wait longer than about 24 days; no staff token lives that long.
    state.expiryTimer = setTimeout(expired, Math.min(Math.max(expires - Date.now(), 0), 2 ** 31 - 1));
  }
  showHeader();
  route();
  const carried = takeUnsent(); // what a sign-out stopped, said again now that the person can press it again
  if (carried.length) notice(`Before you signed in again: ${carried.join(' ')}`, 'warning');
  else notice(vocabularyProblem, vocabularyProblem ? 'warning' : 'info');
  focus(main.querySelector('h1'));
}

function signInView(message, kind = 'info') {
  const { oidc, dev_logins: devLogins } = state.config;
  const tokenInput = el('textarea', { id: 'token-input', rows: '4', autocomplete: 'off', spellcheck: 'false' });
  const parts = [heading(1, 'Sign in')];
  if (message) parts.push(el('p', { class: `notice notice-${kind}`, id: 'sign-in-reason', role: kind === 'error' ? 'alert' : 'status' }, message));
  parts.push(el('div', { id: 'sign-in-unsent', role: 'alert' }));
  if (oidc) {
    const host = new URL(oidc.issuer).host;
    parts.push(el('section', { 'aria-labelledby': 'oidc-title' },
      el('h2', { id: 'oidc-title' }, 'With your organisation'),
      el('button', {
        type: 'button', class: 'primary', id: 'oidc-sign-in',
        onclick: () => startOidc(oidc).catch((error) => signInView(`Sign-in could not start: ${error.message}`, 'error')),
      }, `Sign in with ${host}`)));
  }
  if (devLogins.length) {
    parts.push(el('section', { 'aria-labelledby': 'dev-title' },
      el('h2', { id: 'dev-title' }, 'Development login'),
      el('p', { class: 'muted' }, 'Offered by make dev only: tokens it minted for this machine.'),
      el('div', { class: 'buttons' }, devLogins.map(({ role, token }) => el('button', {
        type: 'button', 'data-dev-login': role, onclick: () => signIn(token),
      }, `Sign in as ${role}`)))));
  }
  parts.push(el('section', { 'aria-labelledby': 'paste-title' },
    el('h2', { id: 'paste-title' }, 'With a token'),
    el('form', {
      onsubmit: (event) => {
        event.preventDefault();
        const token = tokenInput.value.trim();
        if (token) signIn(token);
      },
    },
    el('label', { for: 'token-input' }, 'Bearer token (a JWT)'),
    tokenInput,
    el('div', { class: 'buttons' }, el('button', { type: 'submit', id: 'token-sign-in' }, 'Sign in with this token')))));
  main.replaceChildren(...parts);
  showUnsent();
  focus(main.querySelector('h1'));
}

async function start() {
  configure({
    token: storedToken,
    // Only a signed-in page signs out: a poll that was already on its way when the sign-in expired comes back 401
    // without a token, and must not replace the reason the person was signed out with its own.
    unauthorized: (error) => state.session
      && signOut(`Your sign-in is no longer accepted (${error.messages.join(' ')}). Sign in again.`, 'warning'),
    // Kept per request by api.js: a press waiting out a 503 stays said while the page's polls are answered. Said once
    // per kind of wait (sayState): each retry's time and attempt change beside it, unannounced.
    retrying: (retry) => {
      if (!retry) return say('connection', '');
      const again = new Date(retry.at).toLocaleTimeString();
      if (retry.method !== 'GET') {
        const why = retry.answered ? `is not sent yet: the service is unavailable (${retry.messages.join(' ')})`
          : `got no answer that says whether it took (${retry.messages.join(' ')}): it may or may not have`;
        return sayState('connection', `Your ${retry.label || 'press'} ${why}. It is sent again as the same press, so it`
          + ' cannot take twice.', 'warning', ` Next at ${again} (attempt ${retry.attempt + 1}).`);
      }
      return sayState('connection', `The service is unavailable (${retry.messages.join(' ')}); the database may be waking up.`,
        'warning', ` Retrying in ${retry.seconds} s (attempt ${retry.attempt}).`);
    },
  });
  try {
    state.config = await call('GET', '/console/config.json');
  } catch (error) {
    main.replaceChildren(heading(1, 'The console cannot start'), el('p', { role: 'alert' }, error.message));
    return;
  }
  window.addEventListener('hashchange', route);
  listenForShortcuts(() => Boolean(state.session));
  try {
    const token = await finishOidc(state.config.oidc);
    if (token) return signIn(token);
  } catch (error) {
    return signInView(`Sign-in failed: ${error.message}`, 'error');
  }
  const token = storedToken();
  if (token) return signIn(token);
  return signInView('');
}

// At `/console/` the page's assets load from `/console/console/`, but the API's addresses are relative to the
// page: it moves to `/console` (keeping what follows) before calling anything.
if (location.pathname.endsWith('/console/')) {
  location.replace(`${location.pathname.replace(/\/$/, '')}${location.search}${location.hash}`);
} else {
  start();
}
