import { randomBytes, randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

/**
 * A time-ordered UUID (version 7: 48-bit Unix milliseconds, then random bits). Rows keyed by these
 * are appended at the end of their B-tree index instead of at a random page, so a transaction that
 * writes many of them dirties few pages (less to write and fsync per commit).
 */
export function newOrderedId(now = Date.now()): string {
  // randomUUID draws from a cached entropy pool (cheaper than randomBytes per call); its first 48
  // bits become the time and its version nibble 7. The time part is formatted once per millisecond.
  if (now !== prefixMs) {
    prefixMs = now;
    const t = now.toString(16).padStart(12, '0').slice(-12);
    prefix = `${t.slice(0, 8)}-${t.slice(8, 12)}-7`;
  }
  return prefix + randomUUID().slice(15);
}
let prefixMs = Number.NaN;
let prefix = '';

/** A UUID as svc issues them (RFC 9562 versions 1-8), in its plain 8-4-4-4-12 form only (no urn:uuid:, no braces). */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$';
const UUID_RE = new RegExp(UUID_PATTERN);
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID_RE.test(s);

/** URL-safe random token text with `bytes` bytes of entropy. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');
