/** /v1/blobs/{blob_id}/parse routes and GET /v1/blobs/search. Thin: the services do the work. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { performance } from 'node:perf_hooks';
import type { Static } from 'typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { errorResponses } from '../../http/response-schemas';
import {
  BlobParams, BlobSearchResponse, DeliveriesResponse, ParamCodes, ParseBody, ParseDoneResponse, ParseParams, ParseQueuedResponse, ParseQuery, ParseStatusResponse,
  ReplayResponse, SearchCodes, SearchQuery,
} from './schemas';
import { BLOB_SEARCH_DEFAULTS, type BlobSearch } from './search';
import type { ParseService } from './service';
import { searchQuery } from '../../http/input-rules';

export interface ParseRouteDeps {
  parse: ParseService;
  search: BlobSearch;
  envelope: EnvelopeBuilder;
}

const caller = (r: Parameters<typeof agentOf>[0]) => {
  const a = agentOf(r);
  return { agentId: a.agentId, tier: a.tier };
};

type ParseAnswer = Static<typeof ParseDoneResponse> | Static<typeof ParseQueuedResponse>;

/**
 * JSON text of a declared body, a stored parse result spliced in (parseViewJson): sent as it is, a
 * string goes past the compiled serialiser, so it is its shape that the schema declares.
 */
const jsonText = <T>(text: string) => text as unknown as T;

export const parseRoutes = (deps: ParseRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { parse, search, envelope } = deps;

  app.post('/v1/blobs/:blob_id/parse', {
    schema: {
      params: BlobParams, querystring: ParseQuery, body: ParseBody, tags: ['parse'],
      summary: 'Parse a PDF, DOCX, CSV or XLSX blob: synchronously (200 with the result), or with ?async=true (202 queued, optional signed callback)',
      response: { 200: ParseDoneResponse, 202: ParseQueuedResponse, ...errorResponses(402, 404, 413, 415, 422, 429, 503) },
    },
    config: { auth: 'key', scope: 'svc:blob-store', success: [200, 202], errors: { 402: ['INSUFFICIENT_CREDITS'], 404: ['BLOB_NOT_FOUND'], 413: ['PARSE_TOO_LARGE_SYNC'], 415: ['PARSE_UNSUPPORTED_TYPE'], 422: ['CALLBACK_URL_INVALID'], 429: ['PARSE_RATE_LIMIT', 'PARSE_QUOTA_EXCEEDED'], 503: ['PARSE_ASYNC_DISABLED', 'BLOB_STORE_UNAVAILABLE'] }, validationCodes: ParamCodes },
  }, async (request, reply) => {
    const body = request.body ?? {};
    const r = await parse.parse(caller(request), request.params.blob_id, { async: request.query.async ?? false, callbackUrl: body.callback_url });
    const svc = await envelope.build({ fields: r.svcUsage ? { usage: r.svcUsage } : {} });
    reply.code(r.code);
    if (typeof r.body !== 'string') return { ...r.body, _svc: svc } as ParseAnswer;
    // A complete result is already JSON (spliced in by the service): `_svc` goes after it the same way.
    reply.type('application/json; charset=utf-8');
    return jsonText<ParseAnswer>(`${r.body.slice(0, -1)},"_svc":${JSON.stringify(svc)}}`);
  });

  app.get('/v1/blobs/:blob_id/parse/:parse_id', {
    schema: {
      params: ParseParams, summary: 'Status of a parse; the structured result when complete, the error message when failed', tags: ['parse'],
      response: { 200: ParseStatusResponse, ...errorResponses(404) },
    },
    config: { auth: 'key', scope: 'svc:blob-store', validationCodes: ParamCodes },
  }, async (request, reply) => {
    // JSON text with the stored result spliced in (see parseViewJson).
    reply.type('application/json; charset=utf-8');
    return jsonText<Static<typeof ParseStatusResponse>>(await parse.status(caller(request), request.params.blob_id, request.params.parse_id));
  });

  app.get('/v1/blobs/:blob_id/parse/:parse_id/deliveries', {
    schema: { params: ParseParams, summary: 'Callback delivery attempts of a parse, newest first', tags: ['parse'], response: { 200: DeliveriesResponse, ...errorResponses(404) } },
    config: { auth: 'key', scope: 'svc:blob-store', validationCodes: ParamCodes },
  }, async (request) => parse.deliveries(caller(request), request.params.blob_id, request.params.parse_id));

  app.post('/v1/blobs/:blob_id/parse/:parse_id/replay', {
    schema: {
      params: ParseParams, summary: 'Re-send the parse.completed callback with the same JSON and signature', tags: ['parse'],
      response: { 200: ReplayResponse, ...errorResponses(403, 404, 422, 429) },
    },
    config: { auth: 'key', scope: 'svc:blob-store', errors: { 403: ['CALLBACK_REPLAY_DISABLED'], 404: ['BLOB_NOT_FOUND'], 422: ['PARSE_NOT_COMPLETE', 'PARSE_CALLBACK_URL_MISSING', 'PARSE_RESULT_MISSING'], 429: ['CALLBACK_REPLAY_RATE_LIMIT'] }, validationCodes: ParamCodes },
  }, async (request) => parse.replay(caller(request), request.params.blob_id, request.params.parse_id));

  app.get('/v1/blobs/search', {
    // A charged call: no automatic HEAD twin (it would charge and send nothing).
    exposeHeadRoute: false,
    schema: {
      querystring: SearchQuery, summary: 'Semantic search over the chunks of your parsed blobs (one call in the search pool)', tags: ['search'],
      response: { 200: BlobSearchResponse, ...errorResponses(402, 422, 429, 503) },
    },
    config: { auth: 'key', scope: 'svc:blob-store', errors: { 402: ['INSUFFICIENT_CREDITS'], 422: ['BLOB_QUERY_REQUIRED'], 429: ['SEARCH_CALLS_LIMIT'], 503: ['BLOB_SEARCH_UNAVAILABLE'] }, validationCodes: SearchCodes, inputRules: [searchQuery] },
  }, async (request) => {
    const started = performance.now();
    const q = request.query;
    const r = await search.search(caller(request), q.q ?? '', q.limit ?? BLOB_SEARCH_DEFAULTS.limit, q.threshold ?? BLOB_SEARCH_DEFAULTS.threshold);
    return {
      status: 'success' as const,
      query: r.query,
      provider_used: 'vector' as const,
      results: r.results,
      usage: r.usage,
      cached: false,
      response_time_ms: Math.round(performance.now() - started),
      // Chunks of this agent not yet searchable by meaning (found by their words all the same); 0: complete.
      pending_embeddings: r.pending_embeddings,
      _svc: { ...await envelope.build(), search_id: r.search_id, ...(r.svcUsage ? { usage: r.svcUsage } : {}) },
    };
  });
};
