/**
 * Blank text, as every route that needs "not empty or whitespace" judges it: Unicode's White_Space
 * (String.prototype.trim keeps NEL, U+0085, which would let a query of only NEL slip past) and control
 * characters carry nothing to search for, record or refer to.
 */
const BLANK = /^[\p{White_Space}\p{Cc}]*$/u;
const EDGES = /^[\p{White_Space}\p{Cc}]+|[\p{White_Space}\p{Cc}]+$/gu;

/**
 * isBlank as a JSON Schema pattern, for documents that state the rule (tool definitions, OpenAPI):
 * at least one character that is neither whitespace nor a control character. Without \p{...}, which
 * not every JSON Schema validator reads; NEL (U+0085) is a C1 control, inside \u007f-\u009f.
 */
export const NOT_BLANK_PATTERN = '[^\\s\\u0000-\\u001f\\u007f-\\u009f]';

/** True when `s` has no character other than whitespace and control characters. */
export function isBlank(s: string): boolean {
  return BLANK.test(s);
}

/** `s` without whitespace and control characters at either end (what a search embeds or sends). */
export function trimBlank(s: string): string {
  return s.replace(EDGES, '');
}

/**
 * Third-party text (a page, a document) without what no store keeps as read. A NUL (U+0000: a
 * `&#0;` in DOCX XML, a NUL byte in a page or a CSV, a ZIP entry name quoted in an error) is refused
 * by PostgreSQL's text type, so storing it answered 500 there while SQLite kept it: it is dropped, as
 * an HTML parser drops it. A lone surrogate (a UTF-16 CSV, a `&#xD800;` reference) has no UTF-8
 * form: SQLite stored its three bytes (read back as three U+FFFD), PostgreSQL one U+FFFD; it becomes
 * U+FFFD everywhere, as a UTF-8 decoder would read it.
 */
export function storableText(text: string): string {
  // Two native scans say "nothing to change" for almost every text, about four times faster than the
  // regular expression (~0.18 against ~0.7 ms for a 144,000-character page).
  if (!text.includes('\u0000') && (text as unknown as { isWellFormed(): boolean }).isWellFormed()) return text;
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, (c) => (c === '\u0000' ? '' : '\ufffd')) : text;
}
const UNSTORABLE = /\u0000|\p{Cs}/u;
const UNSTORABLE_ALL = /\u0000|\p{Cs}/gu;
