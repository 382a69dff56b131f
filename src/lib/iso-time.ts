/**
 * Strict ISO 8601 (RFC 3339) text to epoch ms: a calendar date `YYYY-MM-DD`, or a date-time with
 * its zone (`2026-11-26T09:30:00Z`, `…+01:00`; seconds and fractions optional). Date.parse alone
 * rolls 2026-02-30 over to March 2 and reads forms without a zone as local time; these refuse both.
 */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** The calendar fields written must be the ones read back (in the zone they were written in). */
function sameDay(ms: number, m: RegExpExecArray, zoneMinutes: number): boolean {
  const d = new Date(ms + zoneMinutes * 60_000);
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() + 1 === Number(m[2]) && d.getUTCDate() === Number(m[3]);
}

/** Epoch ms of midnight UTC of a real calendar date `YYYY-MM-DD`, else undefined. */
export function parseIsoDate(text: string): number | undefined {
  const m = DATE.exec(text);
  const ms = m ? Date.parse(text) : NaN;
  return m && Number.isFinite(ms) && sameDay(ms, m, 0) ? ms : undefined;
}

/** Epoch ms of a date-time with its zone on a real calendar day, else undefined. */
export function parseIsoInstant(text: string): number | undefined {
  const m = INSTANT.exec(text);
  const ms = m ? Date.parse(text) : NaN;
  if (!m || !Number.isFinite(ms)) return undefined;
  const zone = m[4] === 'Z' ? 0 : (m[4][0] === '-' ? -1 : 1) * (Number(m[4].slice(1, 3)) * 60 + Number(m[4].slice(4, 6)));
  return sameDay(ms, m, zone) ? ms : undefined;
}
