// The engine's signatures, checked as the bridge contract says (docs/contract.md, "The game bridge").
// Invariant: nothing is read from a request before its signature verifies. A delivery is signed as
// sha256=HMAC-SHA256(key, "{timestamp}." + body), a status request over "{timestamp}.GET.{path and query}.",
// and a timestamp more than WINDOW_SECONDS from this side's clock is refused. Comparisons are constant-time. During
// a key rotation the bridge holds two keys and takes a request signed with either.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const WINDOW_SECONDS = 300;

export class Unsigned extends Error {}

export function signature(key, timestamp, signed) {
  return 'sha256=' + createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${timestamp}.`), Buffer.from(signed)])).digest('hex');
}

export function signedHeaders(key, signed, now = Date.now() / 1000) {
  const timestamp = String(Math.floor(now));
  return { 'x-event-timestamp': timestamp, 'x-event-signature': signature(key, timestamp, signed) };
}

// key: the bridge key, or an array of keys any of which verifies (a rotation: the new key and the old one)
export function verify(key, headers, signed, now = Date.now() / 1000) {
  const keys = (Array.isArray(key) ? key : [key]).filter((each) => each);
  const timestamp = headers['x-event-timestamp'] || '';
  const given = headers['x-event-signature'] || '';
  if (!timestamp || !given) throw new Unsigned('unsigned: X-Event-Timestamp and X-Event-Signature are required');
  if (!/^\d+$/.test(timestamp)) throw new Unsigned('X-Event-Timestamp is not Unix seconds');
  const actual = Buffer.from(given);
  // every key compared, each in constant time: which one matched is not told by the time taken
  const matched = keys.map((each) => {
    const expected = Buffer.from(signature(each, timestamp, signed));
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  });
  if (!matched.includes(true)) {
    throw new Unsigned(`the signature does not verify with this bridge's key${keys.length > 1 ? 's' : ''}`);
  }
  const skew = Math.abs(now - Number(timestamp));
  if (skew > WINDOW_SECONDS) {
    throw new Unsigned(`the timestamp is ${Math.round(skew)} s from this side's clock (at most ${WINDOW_SECONDS} s)`);
  }
}

export function statusSigned(target) {
  return Buffer.from(`GET.${target}.`);
}
