/**
 * Test mode (SVC_VALIDATE_RESPONSES): every response a route sends is checked against the response
 * schema it declares for that status, so the contract (OpenAPI, the compiled serialiser) cannot
 * drift from what the handlers return. Off in production: nothing here is installed or loaded.
 *
 * - A JSON object body is checked BEFORE serialisation (preSerialization): the compiled serialiser
 *   silently drops undeclared fields and coerces types, so checking its output would hide drift. The
 *   value checked is the body's JSON round-trip (a Date as the ISO string a client sees).
 * - Objects are closed: a property the schema does not declare is a mismatch unless the schema says
 *   `additionalProperties: true` (each object schema that sets neither additionalProperties nor
 *   unevaluatedProperties is checked as `additionalProperties: false`; an `allOf` as a whole is
 *   checked with `unevaluatedProperties: false`).
 * - A body a handler sends already serialised (a string or bytes: memory GET's stored JSON, HTML, a
 *   stream) is checked at onSend: JSON text is parsed and checked as above; a body of another media
 *   type must be declared as content of that type (`response: { 200: { description, content:
 *   { 'text/html': { schema: { type: 'string' } } } } }`). A route whose success body has no schema
 *   by design says why in route config `responseSchemaExempt`.
 * - A mismatch answers 500 RESPONSE_SCHEMA_MISMATCH naming the route, the status, the bad field and
 *   the validator's message, so the test that caused it fails and says why; it is also appended to
 *   .test-results/response-schema-mismatches.ndjson, so a whole-suite run lists every one.
 * - A status the route declares no schema for is not checked here; test/response-schemas.test.ts
 *   requires every JSON route to declare its success statuses. Such a status (an error the route's
 *   configuration does not name) is listed in .test-results/response-statuses-undeclared.ndjson.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

type Schema = Record<string, any>;
type Check = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string; params?: Record<string, unknown> }[] | null };

export const MISMATCH_REPORT = join('.test-results', 'response-schema-mismatches.ndjson');
/** Statuses routes answered without declaring them (not failures: what the OpenAPI document does not show). */
export const UNDECLARED_REPORT = join('.test-results', 'response-statuses-undeclared.ndjson');

/** A copy of a schema with every object closed unless it says otherwise; `$id`s dropped (each copy compiles alone). */
export function closedCopy(schema: unknown, inAllOf = false): unknown {
  if (Array.isArray(schema)) return schema.map((s) => closedCopy(s));
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === '$id') continue;
    if (k === 'properties' || k === 'patternProperties' || k === '$defs' || k === 'definitions') {
      out[k] = Object.fromEntries(Object.entries(v as Schema).map(([name, sub]) => [name, closedCopy(sub)]));
    } else if (k === 'allOf') {
      out[k] = (v as unknown[]).map((sub) => closedCopy(sub, true));
    } else if (k === 'const' || k === 'enum' || k === 'default' || k === 'examples' || k === 'required') {
      out[k] = v;
    } else {
      out[k] = closedCopy(v);
    }
  }
  const isObject = s.type === 'object' || (s.properties !== undefined && s.type === undefined);
  const decided = 'additionalProperties' in s || 'unevaluatedProperties' in s || 'patternProperties' in s;
  // A branch of an allOf describes part of the object: the allOf closes the whole (below).
  if (isObject && !decided && !inAllOf) out.additionalProperties = false;
  if (Array.isArray(s.allOf) && !('unevaluatedProperties' in s) && !inAllOf && !s.allOf.some((b: Schema) => b?.additionalProperties === true)) {
    out.unevaluatedProperties = false;
  }
  return out;
}

const isJsonType = (type: string) => type === 'application/json' || /^application\/[\w.+-]*\+json$/.test(type);

/** What a route declares for a status (a schema, or `{ description?, content: { <media type>: { schema } } }`). */
export function declaredEntry(response: Schema | undefined, status: number): Schema | undefined {
  if (!response) return undefined;
  const entry = response[status] ?? response[`${String(status)[0]}xx`] ?? response.default;
  return entry && typeof entry === 'object' ? entry as Schema : undefined;
}

/**
 * The schema a route declares for a status and media type, or undefined: nothing declared for the
 * status, or content declared for other media types only (a plain schema is JSON's).
 */
export function declaredSchema(response: Schema | undefined, status: number, mediaType = 'application/json'): Schema | undefined {
  const entry = declaredEntry(response, status);
  if (!entry) return undefined;
  if (entry.content && typeof entry.content === 'object') {
    const c = entry.content[mediaType] ?? entry.content['*/*'];
    return c ? (c.schema ?? {}) : undefined;
  }
  return isJsonType(mediaType) ? entry : undefined;
}

const mediaTypeOf = (reply: FastifyReply) => String(reply.getHeader('content-type') ?? 'application/json').split(';')[0].trim().toLowerCase();

interface Mismatch { route: string; status: number; path: string; problem: string }

const CHECKED = Symbol('svc.responseChecked');

/** Installs the checks on every route registered after this (the app's and its plugins'). */
export async function installResponseValidation(app: FastifyInstance, opts: { report?: string; undeclaredReport?: string } = {}): Promise<void> {
  const report = opts.report ?? MISMATCH_REPORT;
  const undeclaredReport = opts.undeclaredReport ?? UNDECLARED_REPORT;
  // Dev dependencies, loaded only when the checks are on.
  const { Ajv2020 } = await import('ajv/dist/2020.js');
  const addFormats = (await import('ajv-formats')).default as unknown as (ajv: unknown) => void;
  const ajv = new Ajv2020({ strict: false, allErrors: true, coerceTypes: false, useDefaults: false, removeAdditional: false, validateFormats: true });
  addFormats(ajv);
  const compiled = new WeakMap<object, Check>();
  const checkerOf = (schema: Schema): Check => {
    let c = compiled.get(schema);
    if (!c) {
      c = ajv.compile(closedCopy(schema) as Schema) as unknown as Check;
      compiled.set(schema, c);
    }
    return c;
  };

  const routeOf = (request: FastifyRequest) => `${request.method} ${request.routeOptions.url ?? request.url}`;

  function mismatch(request: FastifyRequest, reply: FastifyReply, m: Mismatch) {
    const line = { ...m, at: new Date().toISOString(), test: testFile() };
    try {
      mkdirSync(dirname(report), { recursive: true });
      appendFileSync(report, `${JSON.stringify(line)}\n`);
    } catch {
      /* the answer below still fails the test */
    }
    process.stderr.write(`RESPONSE_SCHEMA_MISMATCH ${m.route} ${m.status} at ${m.path}: ${m.problem}\n`);
    reply.code(500).type('application/json; charset=utf-8');
    return {
      error_code: 'RESPONSE_SCHEMA_MISMATCH',
      message: `${m.route} answered ${m.status} with a body its response schema does not allow: at ${m.path || '(root)'}, ${m.problem}`,
      route: m.route, status: m.status, path: m.path, problem: m.problem,
    };
  }

  /**
   * A status the route answered but does not declare (so the OpenAPI document does not show it):
   * listed once per route and status in the undeclared report, not a failure.
   */
  const seen = new Set<string>();
  function undeclared(request: FastifyRequest, status: number) {
    // Not operations of the API: exempt routes (the reference page's assets), hidden ones (a CORS preflight).
    if ((request.routeOptions.config as { responseSchemaExempt?: string }).responseSchemaExempt || (request.routeOptions.schema as { hide?: boolean } | undefined)?.hide) return;
    const route = routeOf(request);
    if (seen.has(`${route} ${status}`)) return;
    seen.add(`${route} ${status}`);
    try {
      mkdirSync(dirname(undeclaredReport), { recursive: true });
      appendFileSync(undeclaredReport, `${JSON.stringify({ route, status, test: testFile() })}\n`);
    } catch {
      /* a report only */
    }
  }

  /** The problem with a body against the route's schema for this status, if any. */
  function problemOf(schema: Schema, value: unknown): { path: string; problem: string } | undefined {
    const check = checkerOf(schema);
    if (check(value)) return undefined;
    const e = check.errors?.[0];
    const extra = e?.params?.additionalProperty ?? e?.params?.unevaluatedProperty;
    return { path: e?.instancePath ?? '', problem: `${e?.message ?? 'invalid'}${extra ? ` (${String(extra)})` : ''}` };
  }

  const preSerialization = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    (request as unknown as Record<symbol, boolean>)[CHECKED] = true;
    const status = reply.statusCode;
    const response = request.routeOptions.schema?.response as Schema | undefined;
    const schema = declaredSchema(response, status, mediaTypeOf(reply));
    if (!schema) {
      if (request.routeOptions.url && !declaredEntry(response, status)) undeclared(request, status);
      return payload;
    }
    const p = problemOf(schema, JSON.parse(JSON.stringify(payload ?? null)));
    return p ? mismatch(request, reply, { route: routeOf(request), status, ...p }) : payload;
  };

  const onSend = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if ((request as unknown as Record<symbol, boolean>)[CHECKED]) return payload;
    const status = reply.statusCode;
    if (status < 200 || status >= 300 || status === 204 || payload === null || payload === undefined) return payload;
    // Only a route's own answers (not a 404 of no route, not the error handler's).
    if (!request.routeOptions.url || request.is404) return payload;
    const config = request.routeOptions.config as { responseSchemaExempt?: string } | undefined;
    if (config?.responseSchemaExempt) return payload;
    const response = request.routeOptions.schema?.response as Schema | undefined;
    // No schema for this status: not checked here (test/response-schemas.test.ts lists a route without one).
    if (!declaredEntry(response, status)) {
      undeclared(request, status);
      return payload;
    }
    const type = mediaTypeOf(reply);
    const route = routeOf(request);
    const schema = declaredSchema(response, status, type);
    if (!schema) {
      return JSON.stringify(mismatch(request, reply, {
        route, status, path: '',
        problem: `a ${type} body is sent but the route's response for ${status} declares no content of that type (response: { ${status}: { content: { '${type}': { schema } } } })`,
      }));
    }
    if (isJsonType(type) && (typeof payload === 'string' || Buffer.isBuffer(payload))) {
      let value: unknown;
      try {
        value = JSON.parse(payload.toString());
      } catch {
        return JSON.stringify(mismatch(request, reply, { route, status, path: '', problem: `the body sent as ${type} is not JSON` }));
      }
      const p = problemOf(schema, value);
      return p ? JSON.stringify(mismatch(request, reply, { route, status, ...p })) : payload;
    }
    return payload;
  };

  // Route-level hooks run after every app and plugin hook of their kind: the body checked is the one sent.
  app.addHook('onRoute', (opts) => {
    opts.preSerialization = [opts.preSerialization ?? []].flat().concat(preSerialization as never);
    opts.onSend = [opts.onSend ?? []].flat().concat(onSend as never);
  });
}

/** The test file being run, when vitest runs this (for the report). */
function testFile(): string | undefined {
  const state = (globalThis as { __vitest_worker__?: { filepath?: string; current?: { file?: { filepath?: string } } } }).__vitest_worker__;
  return state?.filepath ?? state?.current?.file?.filepath;
}
