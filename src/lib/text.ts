/**
 * Blank text, as every route that needs "not empty or whitespace" judges it: Unicode's White_Space
 * (String.prototype.trim keeps NEL, U+0085, which a query of only NEL used to slip past) and control
 * characters carry nothing to search for, record or refer to.
 */
const BLANK = /^[\p{White_Space}\p{Cc}]*$/u;
const EDGES = /^[\p{White_Space}\p{Cc}]+|[\p{White_Space}\p{Cc}]+$/gu;

/** True when `s` has no character other than whitespace and control characters. */
export function isBlank(s: string): boolean {
  return BLANK.test(s);
}

/** `s` without whitespace and control characters at either end (what a search embeds or sends). */
export function trimBlank(s: string): string {
  return s.replace(EDGES, '');
}
