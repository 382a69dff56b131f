/**
 * Input the schemas let through but no store can keep. Refused as invalid input of the field it
 * arrived in (the route's own code for that field when it maps one, else 422 VALIDATION_FAILED),
 * before any handler runs.
 *
 * Numbers are finite:
 * - Query and path values are text that Ajv coerces: "1e309" becomes Infinity, and Ajv's integer,
 *   minimum and maximum checks all let Infinity through (page=1e309 reached SQL as an offset).
 * - JSON has no range limit on numbers: JSON.parse reads 1e309 (or 400 digits) as Infinity, which
 *   JSON.stringify then writes as null, so a stored value would silently differ from what was sent.
 *
 * JSON bodies nest at most MAX_JSON_DEPTH (1000) levels of arrays and objects.
 *
 * Text has no NUL (U+0000): PostgreSQL's text type cannot hold it (the insert fails), so it is
 * refused in every path, query and body string on both engines alike. Nor a lone surrogate (JSON
 * can write one as an escape, `\ud800`): UTF-8 cannot encode it, so the store kept U+FFFD instead,
 * and two different identifiers were stored as the same text. Fields whose schema is arbitrary JSON
 * (a memory or commons value) are exempt from both: they are stored as JSON text, where each stays
 * its escape.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fieldFailure } from './errors';

/** In JSON text a NUL can only be written as this escape. */
const NUL_ESCAPE = '\\u0000';
/** In JSON text a surrogate can only be written as an escape (UTF-8 bytes of one do not decode). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * Deepest nesting of arrays and objects accepted in a JSON body. JSON.parse reads any depth, but
 * JSON.stringify (storing a value, answering it) overflows the stack at a few thousand levels, which
 * was a 500 after the body had been accepted.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * One linear pass over a JSON text (a regex for long digit runs backtracks: quadratic on digit-heavy
 * text). `tooDeep`: arrays/objects nest deeper than `maxDepth`. `bigNumber`: a number outside a
 * string has a 3+ digit exponent or a 309+ digit run, the only ways to write one that parses to
 * Infinity (then the parsed value is walked to find it). Brackets and digits inside strings do not count.
 */
export function scanJson(text: string, maxDepth: number): { tooDeep: boolean; bigNumber: boolean } {
  let depth = 0;
  let inString = false;
  let run = 0; // digits in a row
  let exponent = false; // the current digit run follows an 'e'/'E' (and an optional '+') of a number
  let bigNumber = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
      continue;
    }
    if (c >= 48 && c <= 57) {
      if (++run >= 309 || (exponent && run >= 3)) bigNumber = true;
      continue;
    }
    exponent = ((c === 101 || c === 69) && run > 0) || (c === 43 && exponent && run === 0);
    run = 0;
    if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > maxDepth) return { tooDeep: true, bigNumber };
    } else if (c === 93 || c === 125) depth--;
  }
  return { tooDeep: false, bigNumber };
}

/** In u-mode a paired surrogate is one code point, so this matches only lone ones. */
const LONE_SURROGATE = /\p{Cs}/u;
type Problem = 'number' | 'nul' | 'surrogate';
const problemOf = (v: unknown, text: boolean): Problem | undefined =>
  typeof v === 'number' ? (Number.isFinite(v) ? undefined : 'number')
    : text && typeof v === 'string' ? (v.includes('\u0000') ? 'nul' : LONE_SURROGATE.test(v) ? 'surrogate' : undefined) : undefined;

/**
 * The first top-level field holding a non-finite number (or, when `textChecked` says so for that
 * field, a string with NUL or a lone surrogate), '' for the value itself; undefined when there is none.
 */
export function badField(value: unknown, textChecked: (field: string) => boolean = () => true): { field: string; problem: Problem } | undefined {
  const direct = problemOf(value, textChecked(''));
  if (direct) return { field: '', problem: direct };
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, top] of Object.entries(value)) {
    const nul = textChecked(key);
    // Iterative walk: a deeply nested document must not overflow the stack.
    const stack: unknown[] = [top];
    while (stack.length > 0) {
      const v = stack.pop();
      const p = problemOf(v, nul);
      if (p) return { field: key, problem: p };
      if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
    }
  }
  return undefined;
}

const DETAIL: Record<Problem, string> = {
  number: 'numbers must be finite (the value is out of range)',
  nul: 'text must not contain the NUL character (U+0000)',
  surrogate: 'text must be well-formed Unicode (it holds a lone surrogate such as \\ud800)',
};

/** Why a text no store can keep is refused (NUL, a lone surrogate), for inputs outside JSON bodies; undefined when it can be kept. */
export function unstorableText(text: string): string | undefined {
  const p = problemOf(text, true);
  return p && p !== 'number' ? DETAIL[p] : undefined;
}

function refuse(request: FastifyRequest, context: 'querystring' | 'params' | 'body', found: { field: string; problem: Problem }) {
  return fieldFailure(request, context, found.field || undefined, DETAIL[found.problem], { detailFirst: true });
}

/** A key secure-json-parse refuses, written plainly (an escaped one goes to the strict parser, which refuses it). */
const POISON_KEY = /"(?:__proto__|constructor)"/;

/** A "__proto__" key, or "constructor" holding "prototype", anywhere but inside the `allowed` top-level fields. */
function poisonOutside(value: unknown, allowed: Set<string>): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: unknown[] = Object.entries(value).filter(([k]) => !allowed.has(k)).map(([, v]) => v);
  if (Object.hasOwn(value, '__proto__') && !allowed.has('__proto__')) return true;
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Object.hasOwn(v, '__proto__')) return true;
    const ctor = (v as Record<string, unknown>).constructor;
    if (Object.hasOwn(v, 'constructor') && ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) return true;
    for (const child of Object.values(v)) stack.push(child);
  }
  return false;
}

/**
 * Where a "__proto__" or "constructor" key that Fastify's parser refuses is: the top-level field
 * holding it (none when the key is itself top-level) and the key; undefined when the text is not
 * JSON or holds no such key. Parsed plainly: JSON.parse makes such keys own properties, never a prototype.
 */
function poisonAt(text: string): { field?: string; key: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const keyIn = (v: unknown): string | undefined => {
    if (v === null || typeof v !== 'object') return undefined;
    if (Object.hasOwn(v, '__proto__')) return '__proto__';
    const ctor = (v as Record<string, unknown>).constructor;
    return Object.hasOwn(v, 'constructor') && ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype') ? 'constructor' : undefined;
  };
  const top = keyIn(value);
  if (top) return { field: Array.isArray(value) ? undefined : top, key: top };
  if (value === null || typeof value !== 'object') return undefined;
  for (const [field, child] of Object.entries(value)) {
    const stack: unknown[] = [child];
    while (stack.length > 0) {
      const v = stack.pop();
      const key = keyIn(v);
      if (key) return { field: Array.isArray(value) ? undefined : field, key };
      if (v !== null && typeof v === 'object') for (const c of Object.values(v)) stack.push(c);
    }
  }
  return undefined;
}

/** Top-level body fields whose schema takes any JSON (no `type`): NUL and lone surrogates are allowed inside them. */
function anyJsonFields(request: FastifyRequest): Set<string> {
  const props = (request.routeOptions.schema?.body as { properties?: Record<string, { type?: unknown; anyOf?: unknown }> } | undefined)?.properties ?? {};
  return new Set(Object.entries(props).filter(([, s]) => s.type === undefined && s.anyOf === undefined).map(([k]) => k));
}

/**
 * Fastify's default JSON parser, as it is: it answers through `done` and returns nothing (its
 * declared type also admits the promise-returning parser form, which it is not).
 */
type CallbackJsonParser = (request: FastifyRequest, body: string, done: (err: Error | null, parsed?: unknown) => void) => void;

export function installInputGuard(app: FastifyInstance): void {
  const defaultJson = app.getDefaultJsonParser('error', 'error') as CallbackJsonParser;
  const keepAnyKey = app.getDefaultJsonParser('ignore', 'ignore') as CallbackJsonParser;
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    // A route that takes no body and got an empty one under a JSON content type (clients that send the
    // header on every request, a DELETE among them): no body, not 400 INVALID_JSON.
    if (text.trim() === '' && !request.routeOptions.schema?.body) return done(null, undefined);
    // Fastify refuses "__proto__" and "constructor": {"prototype": …} keys (prototype poisoning). A
    // field of arbitrary JSON (a memory or commons value) may hold any key: JSON.parse makes it an
    // own property, never the prototype, and the value is only stored and sent back as JSON. Such
    // keys anywhere else are refused as before (by the strict parser, with its answer).
    const anyJson = POISON_KEY.test(text) ? anyJsonFields(request) : undefined;
    const lenient = anyJson !== undefined && anyJson.size > 0;
    // Fastify's parser answers a refused key as invalid JSON; the text is JSON, so the answer is
    // that key's field refused (422, the route's code for the field when it maps one).
    const strictDone = (err: Error | null, parsed?: unknown) => {
      const at = err ? poisonAt(text) : undefined;
      if (!at) return done(err, parsed);
      done(fieldFailure(request, 'body', at.field, `the key "${at.key}" is refused here (it could reach an object's prototype); only a field of arbitrary JSON may hold it`, { detailFirst: true }), undefined);
    };
    (lenient ? keepAnyKey : defaultJson)(request, text, (err: Error | null, parsed?: unknown) => {
      if (err) return (lenient ? done : strictDone)(err, undefined);
      if (lenient && poisonOutside(parsed, anyJson)) return defaultJson(request, text, strictDone);
      const scan = scanJson(text, MAX_JSON_DEPTH);
      if (scan.tooDeep) {
        return done(fieldFailure(request, 'body', undefined, `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, { detailFirst: true }), undefined);
      }
      const oddText = text.includes(NUL_ESCAPE) || SURROGATE_ESCAPE.test(text);
      if (scan.bigNumber || oddText) {
        // Routing runs before body parsing, so the route's schema and codes are known here.
        const exempt = oddText ? (anyJson ?? anyJsonFields(request)) : new Set<string>();
        const found = badField(parsed, (field) => oddText && !exempt.has(field));
        if (found) return done(refuse(request, 'body', found), undefined);
      }
      done(null, parsed);
    });
  });
  app.addHook('preHandler', async (request) => {
    for (const context of ['querystring', 'params'] as const) {
      const values = (context === 'querystring' ? request.query : request.params) as Record<string, unknown> | undefined;
      if (!values || typeof values !== 'object') continue;
      const found = badField(values);
      if (found) throw refuse(request, context, found);
    }
  });
}
