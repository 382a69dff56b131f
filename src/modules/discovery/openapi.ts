/**
 * OpenAPI 3.1 from the route schemas (@fastify/swagger, registered before any module so it
 * sees every route). Added here, once, for every operation: the security requirement that
 * matches the route's auth mode, and the error responses it can give (shared ApiError schema;
 * each response lists its error codes). Details the API contract leaves open are documented as
 * svc's designs in `x-svc-designs`.
 */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { AuthMode } from '../../http/route-config';
import { SVC_VERSION } from '../../version';
import { ErrorBody } from '../../http/response-schemas';
import { DESIGNS_PATH, NOT_SHOWN_DESIGNS } from './designs';
import { guideExamples, type RequestExample } from './guide';
import type { RouteInfo, RouteTable } from './route-table';
import { scopedKeyNeeds, tightened } from './schema-facts';

export const ApiErrorSchema = {
  type: 'object',
  description: 'Every refusal. Validation failures add `field`; limit errors add `upgrade_url`; 401 adds `register_url`; 500 adds `request_id`.',
  required: ['error_code', 'message'],
  properties: {
    error_code: { type: 'string', description: 'Stable machine-readable code, e.g. INVALID_API_KEY' },
    message: { type: 'string', description: 'Human-readable explanation' },
    field: { type: 'string', description: 'Failing input, as <body|querystring|params>.<field>' },
    upgrade_url: { type: 'string', description: 'Where to buy credits (limit errors)' },
    register_url: { type: 'string', description: 'Where to get an API key (401)' },
    request_id: { type: 'string', description: 'Correlates a 500 with the server log' },
  },
  additionalProperties: true,
};

const SECURITY: Record<AuthMode, Record<string, string[]>[]> = {
  none: [],
  optional: [{}, { bearer: [] }],
  key: [{ bearer: [] }],
  root: [{ bearer: [] }],
  admin: [{ adminKey: [] }],
};

type Codes = Map<number, Set<string>>;
const add = (m: Codes, status: number, code: string) => (m.get(status) ?? m.set(status, new Set()).get(status)!).add(code);

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The error responses a route can give, from its auth mode and schemas. */
export function errorCodesOf(r: RouteInfo): Codes {
  const m: Codes = new Map();
  if (r.auth === 'key' || r.auth === 'root' || r.auth === 'optional') add(m, 401, 'INVALID_API_KEY');
  if (r.auth === 'root' || r.bearer === 'root') add(m, 403, 'ROOT_KEY_REQUIRED');
  // A scoped key outside the route's scopes ('any' routes take every key; root routes refuse scoped keys first).
  if ((r.auth === 'key' && r.scope !== 'any') || (r.auth === 'optional' && r.scope !== undefined && r.scope !== 'any')) add(m, 403, 'SCOPE_NOT_GRANTED');
  if (r.auth === 'admin') { add(m, 401, 'INVALID_ADMIN_KEY'); add(m, 503, 'ADMIN_NOT_CONFIGURED'); }
  // Every route: besides its schemas, the input guard refuses a NUL, a lone surrogate or a non-finite
  // number in any path, query or body value, read or not (src/http/input-guard.ts).
  add(m, 422, 'VALIDATION_FAILED');
  for (const v of Object.values(r.validationCodes)) add(m, v.status, v.code);
  for (const [status, codes] of Object.entries(r.errors)) for (const code of codes) add(m, Number(status), code);
  // A call that can be paid from credit is refused during a staged resurrection (custody: restrictions.ts).
  if (m.get(402)?.has('INSUFFICIENT_CREDITS')) add(m, 403, 'STAGED_RESURRECTION_RESTRICTED');
  // A body sent to a method that carries one is parsed whether or not the route reads it, and one
  // that arrives too slowly is cut off (src/http/slow-clients.ts: SVC_BODY_TIMEOUT_MS, SVC_BODY_MIN_BYTES_PER_SECOND).
  if (r.body || r.consumes || BODY_METHODS.has(r.method)) {
    add(m, 400, 'INVALID_JSON'); add(m, 408, 'REQUEST_TIMEOUT'); add(m, 413, 'PAYLOAD_TOO_LARGE'); add(m, 415, 'UNSUPPORTED_MEDIA_TYPE');
  }
  if (r.params) { add(m, 400, 'BAD_REQUEST'); add(m, 414, 'URI_TOO_LONG'); }
  add(m, 500, 'INTERNAL_ERROR');
  // On PostgreSQL, the server out of reach (docs/api.md); the memory routes name it MEMORY_LEDGER_UNAVAILABLE.
  if (!m.get(503)?.has('MEMORY_LEDGER_UNAVAILABLE')) add(m, 503, 'DATABASE_UNAVAILABLE');
  return m;
}

const errorRef = { $ref: '#/components/schemas/ApiError' };

/** What the shared refusals say (src/http/auth.ts, errors.ts), for the examples of the reference page. */
const SHARED_REFUSALS: Record<string, { message: string; [field: string]: unknown }> = {
  INVALID_API_KEY: { message: 'Missing or invalid API key: send Authorization: Bearer svc_...', register_url: '<base_url>/v1/register' },
  ROOT_KEY_REQUIRED: { message: 'This route needs the root API key; a scoped key or session token does not suffice' },
  SCOPE_NOT_GRANTED: { message: 'This key\'s scopes do not include the one this route needs', required_scope: 'svc:<scope>', key_scopes: ['svc:<scope>'] },
  INVALID_ADMIN_KEY: { message: 'Missing or invalid X-Admin-Key' },
  ADMIN_NOT_CONFIGURED: { message: 'Admin routes are disabled: SVC_ADMIN_KEY is not set' },
  VALIDATION_FAILED: { message: 'Invalid body.<field>: <what the schema requires>', field: 'body.<field>' },
  INVALID_JSON: { message: 'Request body is not valid JSON' },
  PAYLOAD_TOO_LARGE: { message: 'Request body is larger than this route accepts' },
  UNSUPPORTED_MEDIA_TYPE: { message: 'Unsupported Media Type: <the Content-Type sent>' },
  BAD_REQUEST: { message: 'The URL path is not valid (malformed percent-encoding)' },
  URI_TOO_LONG: { message: 'A path segment of this URL is longer than 8192 characters' },
  INTERNAL_ERROR: { message: 'An unexpected error occurred; it has been logged.', request_id: '<request id>' },
  DATABASE_UNAVAILABLE: { message: 'The database is out of reach; try again shortly' },
  STAGED_RESURRECTION_RESTRICTED: { message: 'This agent is in staged resurrection: <what is restricted> until <time>' },
};

/** An example body of a refusal: the route's own message for a validation code, else the shared one, else a placeholder. */
function errorExample(route: RouteInfo, code: string) {
  const own = Object.entries(route.validationCodes).find(([, v]) => v.code === code && v.message);
  if (own) return { error_code: code, message: own[1].message, field: own[0] };
  return { error_code: code, ...(SHARED_REFUSALS[code] ?? { message: '<what went wrong and what to do>' }) };
}

/**
 * The response of an error status: the shared body (ApiError), the codes the route can answer under
 * it (`x-svc-error-codes`, also in the description the reference page shows) and one example per
 * code. A route that declares a body of its own for the status keeps it (/mcp's JSON-RPC errors, /health's
 * 503 with the probe's fields), with the codes.
 */
function errorResponseOf(route: RouteInfo, status: number, codes: string[], existing: Record<string, any> | undefined) {
  const description = codes.length ? `Error${codes.length > 1 ? 's' : ''}: ${codes.map((c) => `\`${c}\``).join(', ')}` : existing?.description ?? 'Error';
  const declared = route.response?.[status];
  if (declared && declared !== ErrorBody && existing?.content) {
    if (codes.length) for (const media of Object.values<Record<string, any>>(existing.content)) media.schema = { ...media.schema, 'x-svc-error-codes': codes };
    return { ...existing, description: [declared.description, codes.length ? description : ''].filter(Boolean).join('. ') || 'Error' };
  }
  const examples = Object.fromEntries(codes.map((c) => [c, { summary: c, value: errorExample(route, c) }]));
  return {
    description,
    content: { 'application/json': { schema: { ...errorRef, ...(codes.length ? { 'x-svc-error-codes': codes } : {}) }, ...(codes.length ? { examples } : {}) } },
  };
}

/** The guide's steps as request examples of the operations they call (body, query and path values). */
function addRequestExamples(op: Record<string, any>, examples: RequestExample[]) {
  const json = op.requestBody?.content?.['application/json'];
  const bodies = examples.filter((e) => e.body !== undefined);
  if (json && bodies.length) {
    json.examples = { ...json.examples, ...Object.fromEntries(bodies.map((e) => [e.name, { summary: e.summary, value: e.body }])) };
  }
  const first = examples[0];
  if (!first || !op.parameters) return;
  op.parameters = op.parameters.map((p: Record<string, any>) => {
    const value = p.in === 'query' ? first.query?.[p.name] : p.in === 'path' ? first.params[p.name] : undefined;
    // A placeholder (<agent_id>) is no example of a value the schema checks.
    return value === undefined || p.example !== undefined || /^<.*>$/.test(String(value)) ? p : { ...p, example: value };
  });
}

const AUTH_TEXT: Record<AuthMode, string> = {
  none: 'public, no credentials',
  optional: 'optional Bearer (an API key or session token adds the caller\'s own fields)',
  key: 'Bearer: an API key (root or scoped) or a svc_session_ token',
  root: 'Bearer: the root API key (scoped keys and session tokens are refused with 403 ROOT_KEY_REQUIRED)',
  admin: 'the X-Admin-Key header',
};

/** The operation's description: the route's own, then who may call it and the error codes per status (markdown). */
function describeOperation(op: Record<string, any>, route: RouteInfo, codes: Codes): string {
  const needs = scopedKeyNeeds(route);
  const auth = route.bearer === 'root' ? 'optional Bearer: when sent, the root API key' : AUTH_TEXT[route.auth];
  const scope = needs === undefined ? '' : needs === null ? ' Scoped keys: refused.' : needs === 'any' ? ' Scoped keys: any key of the agent.' : ` Scoped keys: need \`${needs}\`.`;
  const rows = [...codes].sort(([a], [b]) => a - b).map(([status, set]) => `| ${status} | ${[...set].map((c) => `\`${c}\``).join(', ')} |`);
  return [op.description, `**Authentication:** ${auth}.${scope}`, `**Error codes** (body \`ApiError\`):\n\n| Status | error_code |\n|---|---|\n${rows.join('\n')}`]
    .filter(Boolean).join('\n\n');
}

/** The request body of a route that takes bytes: multipart with its `file` part, or the raw bytes under their own type. */
function bytesBody(types: string[]) {
  const content: Record<string, unknown> = {};
  for (const type of types) {
    content[type] = type === 'multipart/form-data'
      ? { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The bytes to store' } } } }
      : { schema: { type: 'string', contentMediaType: type === '*/*' ? 'application/octet-stream' : type, description: 'The bytes to store; Content-Type is stored as their media type' } };
  }
  return { required: true, content };
}

function decorate(doc: Record<string, any>, table: RouteTable) {
  const examples = guideExamples(table);
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Record<string, any>>(item)) {
      const route = table.find(method, path);
      if (!route || typeof op !== 'object') continue;
      op.security = SECURITY[route.auth];
      op['x-svc-auth'] = route.auth;
      // An optional route that takes only the root key as Bearer (the other way in is a signature in the body).
      if (route.bearer) op['x-svc-bearer'] = route.bearer;
      // What a scoped key needs: a capability URI, 'any', or null (scoped keys refused).
      const needs = scopedKeyNeeds(route);
      if (needs !== undefined) op['x-svc-scope'] = needs;
      op.responses ??= {};
      // What the handler enforces beyond the schema (a required search q, a note's length): copies, the
      // document's schemas may be the route's own objects.
      for (const rule of route.inputRules) {
        if (rule.part === 'body') {
          const body = op.requestBody?.content?.['application/json']?.schema;
          if (body?.properties?.[rule.field]) body.properties = { ...body.properties, [rule.field]: tightened(body.properties[rule.field], rule.schema) };
        } else {
          const where = rule.part === 'querystring' ? 'query' : 'path';
          op.parameters = (op.parameters ?? []).map((p: Record<string, any>) => (p.in === where && p.name === rule.field
            ? { ...p, ...(rule.required ? { required: true } : {}), schema: tightened(p.schema, rule.schema) }
            : p));
        }
      }
      // A route that takes bytes, not JSON (blob upload), has no body schema; its media types are its body.
      if (!op.requestBody && route.consumes?.length) op.requestBody = bytesBody(route.consumes);
      // A body whose fields are all optional may be left out (parse, billing setup): say so.
      if (op.requestBody && route.body && !((route.body as { required?: unknown[] }).required ?? []).length) op.requestBody.required = false;
      // @fastify/swagger writes a 200 for a route without a response schema; the route says its own.
      const plain = op.responses['200'];
      if (plain && !route.success.includes(200)) delete op.responses['200'];
      for (const status of route.success) {
        op.responses[String(status)] ??= { description: status === 204 ? 'No content' : plain?.description ?? 'Success' };
      }
      // Every error status is the shared ApiError body with the codes the route can answer under it
      // (routes declare ErrorBody for them: src/http/error-responses.ts; the document names it once).
      const codes = errorCodesOf(route);
      const statuses = new Set([...codes.keys()].map(String));
      for (const status of Object.keys(op.responses)) if (Number(status) >= 400) statuses.add(status);
      for (const status of statuses) op.responses[status] = errorResponseOf(route, Number(status), [...(codes.get(Number(status)) ?? [])], op.responses[status]);
      // The codes per status on the operation too (the reference page lists an operation's extensions).
      op['x-svc-error-codes'] = Object.fromEntries([...codes].map(([status, set]) => [String(status), [...set]]));
      op.description = describeOperation(op, route, codes);
      addRequestExamples(op, examples.filter((e) => e.method === route.method && e.path === route.path));
    }
  }
  return doc;
}

export async function registerOpenApi(app: FastifyInstance, opts: { baseUrl: string; table: RouteTable }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'svc API',
        version: SVC_VERSION,
        description: [
          'Identity, memory, search, documents, browsing, trust and billing for software agents. '
            + 'Start at GET /v1/capabilities or GET /v1/guide; an agent that knows only the base address finds everything from GET /.',
          '**Authentication.** `Authorization: Bearer <key>` with an API key from POST /v1/register (the root key `svc_...`, or a scoped key '
            + 'from POST /v1/me/keys) or a `svc_session_` token from the passport session exchange; admin routes take `X-Admin-Key`. '
            + 'Each operation says which it needs (`x-svc-auth`: none, optional, key, root, admin) and what a scoped key needs (`x-svc-scope`).',
          '**Errors.** Every refusal has the `ApiError` body (`error_code`, `message`, and the fields its code documents); each operation '
            + 'lists its codes per status (`x-svc-error-codes`) with an example of each.',
          `**Where the API contract leaves a detail open**, svc's decisions are listed on [a page of their own](${DESIGNS_PATH}) `
            + '(and in this document as `x-svc-designs`). The document itself: [openapi.json](/openapi.json).',
        ].join('\n\n'),
      },
      servers: [{ url: opts.baseUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http', scheme: 'bearer', bearerFormat: 'svc_ API key or svc_session_ token',
            description: 'An API key (root `svc_...` from POST /v1/register, or a scoped key from POST /v1/me/keys) or a session token '
              + '(`svc_session_...`, 3600 s) from POST /v1/auth/passport/verify. Routes marked root take only the root key.',
          },
          adminKey: { type: 'apiKey', in: 'header', name: 'X-Admin-Key', description: 'The operator\'s admin key (SVC_ADMIN_KEY); admin routes answer 503 ADMIN_NOT_CONFIGURED without it.' },
        },
        schemas: { ApiError: ApiErrorSchema as any },
      },
    },
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Record<string, any> }).openapiObject;
      decorate(doc, opts.table);
      doc['x-svc-designs'] = NOT_SHOWN_DESIGNS;
      return doc;
    },
  });
}
