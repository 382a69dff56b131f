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
import { NOT_SHOWN_DESIGNS } from './designs';
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

/** The error responses a route can give, from its auth mode and schemas. */
export function errorCodesOf(r: RouteInfo): Codes {
  const m: Codes = new Map();
  if (r.auth === 'key' || r.auth === 'root' || r.auth === 'optional') add(m, 401, 'INVALID_API_KEY');
  if (r.auth === 'root' || r.bearer === 'root') add(m, 403, 'ROOT_KEY_REQUIRED');
  // A scoped key outside the route's scopes ('any' routes take every key; root routes refuse scoped keys first).
  if ((r.auth === 'key' && r.scope !== 'any') || (r.auth === 'optional' && r.scope !== undefined && r.scope !== 'any')) add(m, 403, 'SCOPE_NOT_GRANTED');
  if (r.auth === 'admin') { add(m, 401, 'INVALID_ADMIN_KEY'); add(m, 503, 'ADMIN_NOT_CONFIGURED'); }
  if (r.params || r.querystring || r.body) add(m, 422, 'VALIDATION_FAILED');
  for (const v of Object.values(r.validationCodes)) add(m, v.status, v.code);
  for (const [status, codes] of Object.entries(r.errors)) for (const code of codes) add(m, Number(status), code);
  // A call that can be paid from credit is refused during a staged resurrection (custody: restrictions.ts).
  if (m.get(402)?.has('INSUFFICIENT_CREDITS')) add(m, 403, 'STAGED_RESURRECTION_RESTRICTED');
  if (r.body) { add(m, 400, 'INVALID_JSON'); add(m, 413, 'PAYLOAD_TOO_LARGE'); add(m, 415, 'UNSUPPORTED_MEDIA_TYPE'); }
  if (r.params) { add(m, 400, 'BAD_REQUEST'); add(m, 414, 'URI_TOO_LONG'); }
  add(m, 500, 'INTERNAL_ERROR');
  // On PostgreSQL, the server out of reach (docs/api.md); the memory routes name it MEMORY_LEDGER_UNAVAILABLE.
  if (!m.get(503)?.has('MEMORY_LEDGER_UNAVAILABLE')) add(m, 503, 'DATABASE_UNAVAILABLE');
  return m;
}

const errorRef = { $ref: '#/components/schemas/ApiError' };

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
      const codesOf = errorCodesOf(route);
      const errorStatuses = new Set([...codesOf.keys()].map(String));
      for (const status of Object.keys(op.responses)) if (Number(status) >= 400) errorStatuses.add(status);
      for (const status of errorStatuses) {
        const list = [...(codesOf.get(Number(status)) ?? [])];
        op.responses[status] = {
          description: list.length ? `Error: ${list.join(', ')}` : op.responses[status]?.description ?? 'Error',
          content: { 'application/json': { schema: { ...errorRef, ...(list.length ? { 'x-svc-error-codes': list } : {}) } } },
        };
      }
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
        description: 'Identity, memory, search, documents, browsing, trust and billing for software agents. '
          + 'Start at GET /v1/capabilities or GET /v1/guide. Errors share the ApiError body.',
      },
      servers: [{ url: opts.baseUrl }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'svc_ API key or svc_session_ token' },
          adminKey: { type: 'apiKey', in: 'header', name: 'X-Admin-Key' },
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
