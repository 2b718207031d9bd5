// @ts-check
// Who is signed in, and how they got there: a pasted token, a development login, or
// OpenID Connect (authorisation code + PKCE).
//
// The token lives in this tab's sessionStorage only, never in localStorage or a
// cookie. The console reads its `exp` to sign out on time; it never trusts the
// token's contents for anything else: the API checks the signature, issuer,
// audience and roles on every call, and /console/session reports what it found.
//
// From an OpenID Connect provider the console sends the ID token: its audience is
// the console's own client (EVENTS_JWT_AUDIENCE names that client id) and it
// carries the person's groups; an access token (Cognito's, for one) may have no
// `aud` at all, which the API requires.

import { call } from './api.js';

const TOKEN_KEY = 'events.console.token';
const PENDING_KEY = 'events.console.oidc';
const MAX_PROVIDER_TEXT = 300;

export function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

function base64urlDecode(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=');
  return new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// The token's claims, unverified (only `exp` and `nonce` are read), or null if it is not a JWT.
export function claimsOf(token) {
  try {
    return JSON.parse(base64urlDecode(token.split('.')[1]));
  } catch {
    return null;
  }
}

// When the token stops being good, as milliseconds since the epoch (null: no `exp`).
export function expiresAt(token) {
  const exp = claimsOf(token)?.exp;
  return typeof exp === 'number' ? exp * 1000 : null;
}

// The session the API sees for `token`: { sub, roles, may: { control, define } }.
export async function checkToken() {
  return call('GET', '/console/session');
}

function randomText(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

export function redirectUri() {
  return location.origin + location.pathname;
}

async function discover(issuer) {
  const response = await fetch(`${issuer}/.well-known/openid-configuration`, { cache: 'no-store' });
  if (!response.ok) throw new Error(`the identity provider's discovery document answered ${response.status}`);
  const discovery = await response.json();
  if (!discovery.authorization_endpoint || !discovery.token_endpoint) {
    throw new Error("the identity provider's discovery document names no authorisation or token endpoint");
  }
  return discovery;
}

// Off to the provider; it sends the browser back to this page with ?code=…&state=….
export async function startOidc(oidc) {
  const discovery = await discover(oidc.issuer);
  const verifier = randomText(48);
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const pending = {
    verifier, state: randomText(24), nonce: randomText(24), tokenEndpoint: discovery.token_endpoint, returnTo: location.hash,
  };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(discovery.authorization_endpoint);
  for (const [name, value] of Object.entries({
    response_type: 'code', client_id: oidc.client_id, redirect_uri: redirectUri(), scope: oidc.scope,
    state: pending.state, nonce: pending.nonce, code_challenge: challenge, code_challenge_method: 'S256',
  })) url.searchParams.set(name, value);
  location.assign(url.toString());
}

// Back from the provider: trade the code (and the PKCE verifier) for tokens. Null if this is no such return.
export async function finishOidc(oidc) {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || 'null');
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, '', location.pathname + (pending?.returnTo || '#/runs'));
  // The state first: anyone can send a link with ?error=…&error_description=<their text>, and nothing
  // of it is shown unless it answers the sign-in this tab started.
  if (!oidc || !pending || params.get('state') !== pending.state) {
    throw new Error('this sign-in answer does not match a sign-in started here');
  }
  if (params.has('error')) {
    const said = (params.get('error_description') || params.get('error')).slice(0, MAX_PROVIDER_TEXT);
    throw new Error(`the identity provider refused: ${said}`);
  }
  const response = await fetch(pending.tokenEndpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code: params.get('code'), redirect_uri: redirectUri(),
      client_id: oidc.client_id, code_verifier: pending.verifier,
    }),
  });
  const tokens = await response.json().catch(() => ({}));
  if (!response.ok || typeof tokens.id_token !== 'string') {
    throw new Error(`the identity provider issued no token: ${tokens.error_description || tokens.error || response.status}`);
  }
  if (claimsOf(tokens.id_token)?.nonce !== pending.nonce) {
    throw new Error("the ID token does not carry this sign-in's nonce");
  }
  return tokens.id_token;
}
