import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { RateLimiter } from '../../infra/limits';
import { memoryRateLimit } from './rate-limit';
import {
  ContextQuery, ContextValidationCodes, KeyParams, KeyValidationCodes, ListQuery, ListValidationCodes, MAX_VALUE_BYTES, PutBody,
  PutValidationCodes, SearchQuery, SearchValidationCodes,
  MemoryContextResponse, MemoryDeleteResponse, MemoryEntryResponse, MemoryListResponse, MemoryPutResponse, MemorySearchResponse, MemoryStatsResponse,
} from './schemas';
import { Type, type Static } from 'typebox';
import type { MemoryService } from './service';
import { searchQuery } from '../../http/input-rules';
import { etagOf, ledgerErrorHandler, parseIfMatch } from './ledger';

/** PUT's If-Match (ledger.ts parses it): the ETag a GET or PUT of the key answered, a list of them, or *. */
const PutHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 1024, description: 'Write only when the live version is this ETag ("<version>", as GET and PUT answer it), one of a list, or * (any live value); else 409 MEMORY_LEDGER_VERSION_CONFLICT' })),
});

export interface MemoryRouteDeps {
  memory: MemoryService;
  limiter: RateLimiter;
  ratePerMinute: number;
  bodyLimitBytes: number;
  /** Carried by limit errors. */
  upgradeUrl?: string;
  /** Builds `_svc` for the metered PUT response. */
  envelope?: EnvelopeBuilder;
}

/**
 * /v1/memory routes. The fixed paths (stats, context, search) are static routes, which Fastify's
 * router always prefers to the `:key` parameter: a key literally named `context` cannot be read by
 * GET, though PUT and DELETE of it work (docs/memory.md).
 */
export const memoryRoutes = (deps: MemoryRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { memory } = deps;
  const caller = (r: Parameters<typeof agentOf>[0]) => {
    const a = agentOf(r);
    return { agentId: a.agentId, tier: a.tier };
  };
  app.addHook('preValidation', memoryRateLimit(deps.limiter, deps.ratePerMinute, 'memory', deps.upgradeUrl));
  // The ledger out of reach is MEMORY_LEDGER_UNAVAILABLE on these routes (ledger.ts), DATABASE_UNAVAILABLE elsewhere.
  app.setErrorHandler(ledgerErrorHandler);

  app.get('/v1/memory', {
    schema: { querystring: ListQuery, summary: 'List memory keys (metadata only, never values)', tags: ['memory'], response: { 200: MemoryListResponse } },
    config: { auth: 'key', scope: 'svc:memory', validationCodes: ListValidationCodes, errors: { 429: ['RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_LEDGER_UNAVAILABLE'] } },
  }, async (request) => memory.list(caller(request), request.query));

  app.get('/v1/memory/stats', {
    schema: { summary: 'Memory usage: writes this month, what remains, storage', tags: ['memory'], response: { 200: MemoryStatsResponse } },
    config: { auth: 'key', scope: 'svc:memory', errors: { 429: ['RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_LEDGER_UNAVAILABLE'] } },
  }, async (request) => memory.stats(caller(request)));

  app.get('/v1/memory/context', {
    schema: { querystring: ContextQuery, summary: 'Context reload: most important, then most recent memories (not semantic)', tags: ['memory'], response: { 200: MemoryContextResponse } },
    config: { auth: 'key', scope: 'svc:memory', validationCodes: ContextValidationCodes, errors: { 429: ['RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_LEDGER_UNAVAILABLE'] } },
  }, async (request) => memory.context(caller(request), request.query));

  app.get('/v1/memory/search', {
    schema: { querystring: SearchQuery, summary: 'Semantic search over your memories', tags: ['memory'], response: { 200: MemorySearchResponse } },
    config: { auth: 'key', scope: 'svc:memory', errors: { 422: ['MEMORY_QUERY_REQUIRED'], 429: ['RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_SEARCH_UNAVAILABLE', 'MEMORY_LEDGER_UNAVAILABLE'] }, validationCodes: SearchValidationCodes, inputRules: [searchQuery] },
  }, async (request) => memory.search(caller(request), request.query));

  app.put('/v1/memory/:key', {
    bodyLimit: deps.bodyLimitBytes,
    schema: { params: KeyParams, body: PutBody, headers: PutHeaders, summary: 'Store a JSON value under a key (appends a ledger version); If-Match: "<version>" writes only over that live version', tags: ['memory'], response: { 200: MemoryPutResponse } },
    config: {
      auth: 'key', scope: 'svc:memory', validationCodes: PutValidationCodes,
      errors: { 402: ['INSUFFICIENT_CREDITS'], 409: ['MEMORY_LEDGER_VERSION_CONFLICT'], 413: ['MEMORY_VALUE_TOO_LARGE', 'MEMORY_STORAGE_LIMIT'], 429: ['MEMORY_OPS_LIMIT', 'RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_LEDGER_UNAVAILABLE'] },
      // Every other field is small: a body past the limit carries a value far past the value's own.
      bodyTooLarge: { status: 413, code: 'MEMORY_VALUE_TOO_LARGE', message: `The request body is over ${deps.bodyLimitBytes} bytes; a value is at most ${MAX_VALUE_BYTES} bytes (512 KB) once serialized` },
    },
  }, async (request, reply) => {
    const a = caller(request);
    // If-Match: write only over the version the client last saw (ledger.ts); the new version is the answer's ETag.
    const { svcUsage, ...body } = await memory.put(a, request.params.key, request.body, parseIfMatch(request.headers['if-match']));
    reply.header('etag', etagOf(body.version));
    // A memory write is metered: its response carries `_svc` with billing's usage (the response envelope).
    if (!deps.envelope) return body;
    return { ...body, _svc: await deps.envelope.build({ fields: svcUsage ? { usage: svcUsage } : {} }) };
  });

  app.get('/v1/memory/:key', {
    schema: { params: KeyParams, summary: 'Read the latest live value of a key', tags: ['memory'], response: { 200: MemoryEntryResponse } },
    config: { auth: 'key', scope: 'svc:memory', errors: { 404: ['MEMORY_KEY_NOT_FOUND'], 429: ['RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_LEDGER_UNAVAILABLE'] }, validationCodes: KeyValidationCodes },
  }, async (request, reply) => {
    const { json, version } = await memory.getEntry(caller(request), request.params.key);
    // The live version as a strong ETag: what a PUT's If-Match names to write over exactly this value.
    // JSON text with the stored value spliced in (never re-serialised); its shape is MemoryEntryResponse.
    return reply.type('application/json; charset=utf-8').header('etag', etagOf(version)).send(json as unknown as Static<typeof MemoryEntryResponse>);
  });

  app.delete('/v1/memory/:key', {
    schema: { params: KeyParams, summary: 'Delete a key (appends a tombstone; history is kept)', tags: ['memory'], response: { 200: MemoryDeleteResponse } },
    config: { auth: 'key', scope: 'svc:memory', errors: { 404: ['MEMORY_KEY_NOT_FOUND'], 429: ['RATE_LIMIT_EXCEEDED'], 503: ['MEMORY_LEDGER_UNAVAILABLE'] }, validationCodes: KeyValidationCodes },
  }, async (request) => memory.remove(caller(request), request.params.key));
};
