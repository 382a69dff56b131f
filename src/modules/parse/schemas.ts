import { Type } from 'typebox';
import { IsoTime, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { UsageSnapshotSchema } from '../billing/schemas';
import { SearchUsageSchema } from '../usage/schemas';
import { BLOB_ID_PATTERN } from '../blobs/ids';
import { BLOB_SEARCH_DEFAULTS } from './search';

export const BlobParams = Type.Object({ blob_id: Type.String({ pattern: BLOB_ID_PATTERN }) });
export const ParseParams = Type.Object({
  blob_id: Type.String({ pattern: BLOB_ID_PATTERN }),
  parse_id: Type.String({ format: 'uuid', maxLength: 36 }),
});

const notFound = { status: 404, code: 'BLOB_NOT_FOUND', message: 'No such blob or parse' };
/** Malformed ids look exactly like missing ones. */
export const ParamCodes = { 'params.blob_id': notFound, 'params.parse_id': notFound };

export const ParseQuery = Type.Object({
  async: Type.Optional(Type.Boolean({ default: false, description: 'true: queue the parse and answer 202 (callback_url optional)' })),
});

export const ParseBody = Type.Union([
  Type.Null(),
  Type.Object({
    callback_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'HTTPS URL on a publicly resolvable host; receives the signed parse.completed callback' })),
  }, { additionalProperties: false }),
]);

export const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 500, description: 'Query text, 1 to 500 characters (embedded server-side)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: BLOB_SEARCH_DEFAULTS.limit, description: `1 to 20, default ${BLOB_SEARCH_DEFAULTS.limit}` })),
  threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: BLOB_SEARCH_DEFAULTS.threshold, description: `Minimum similarity 0 to 1, default ${BLOB_SEARCH_DEFAULTS.threshold}` })),
});
/** A missing or blank q is BLOB_QUERY_REQUIRED (the service); one over 500 characters, VALIDATION_FAILED. */
export const SearchCodes = {};


// ---- Responses ----

const Success = Type.Literal('success');

/** `_svc` of a metered parse answer: the envelope and, when the call was metered, billing's usage figures. */
const SvcWithUsage = Type.Object({
  ...SvcEnvelopeSchema.properties,
  usage: Type.Optional(UsageSnapshotSchema),
}, { additionalProperties: true });

/** Where a chunk comes from in its document (infra/parsers ChunkLocation); only the fields that apply. */
export const ChunkLocationSchema = Type.Object({
  page: Type.Optional(Type.Integer({ description: 'PDF: first page the chunk covers (1-based)' })),
  page_end: Type.Optional(Type.Integer({ description: 'PDF: last page, when the chunk spans pages' })),
  sheet: Type.Optional(Type.String({ description: 'XLSX: sheet name' })),
  table: Type.Optional(Type.Integer({ description: 'Tables: index into `tables`' })),
  row_start: Type.Optional(Type.Integer()),
  row_end: Type.Optional(Type.Integer()),
  heading: Type.Optional(Type.String({ description: 'DOCX: nearest heading before the chunk' })),
}, { additionalProperties: true, description: 'Stored with the parse: open to fields a later parser version adds' });

/**
 * The structured `result` of a complete parse, stored as the parser wrote it (docs/parsing.md has
 * every field): open, as a stored JSON value is.
 */
export const ParseResultSchema = Type.Object({
  kind: Type.String({ description: 'pdf, docx, csv or xlsx' }),
  text: Type.String({ description: 'Full text; paragraphs separated by a blank line, table rows as `cell | cell` lines' }),
  pages: Type.Optional(Type.Array(Type.Object({ number: Type.Integer(), text: Type.String() }, { additionalProperties: true }))),
  sheets: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  header: Type.Optional(Type.Array(Type.String())),
  rows: Type.Optional(Type.Array(Type.Array(Type.String()))),
  tables: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  metadata: Type.Object({}, { additionalProperties: true, description: 'content_type, size_bytes, counts, document properties, truncated, warnings, parser...' }),
  chunks: Type.Array(Type.Object({
    index: Type.Integer(), text: Type.String(), char_start: Type.Integer(), char_end: Type.Integer(), location: ChunkLocationSchema,
  }, { additionalProperties: true })),
}, { additionalProperties: true });

/** The parse record (views.ts parseView / parseViewJson); which fields occur depends on the status. */
const parseFields = {
  status: Type.String({ description: 'queued, running, complete or failed' }),
  parse_id: Type.String({ format: 'uuid' }),
  blob_id: Type.String(),
  mode: Type.String({ description: 'sync or async' }),
  content_type: Type.String({ description: 'The blob\'s media type when the parse was asked for' }),
  created_at: IsoTime(),
  started_at: Nullable(IsoTime()),
  completed_at: Nullable(IsoTime()),
  callback_url: Nullable(Type.String()),
  error: Type.Optional(Type.String({ description: 'failed only: what went wrong' })),
  failure_reason: Type.Optional(Type.String({ description: 'failed only: corrupt, too_large, timeout, memory, unsupported, internal or blob_deleted' })),
  result: Type.Optional(Nullable(ParseResultSchema, { description: 'complete only; null once retention dropped it (result_expired)' })),
  result_expired: Type.Optional(Type.Literal(true)),
};

/** POST .../parse, synchronous: the finished record (complete or failed). */
export const ParseDoneResponse = Type.Object({ ...parseFields, _svc: SvcWithUsage }, { description: 'The finished parse: complete with its result, or failed with its error' });

/** POST .../parse?async=true: queued. */
export const ParseQueuedResponse = Type.Object({
  ...parseFields,
  status_url: Type.String({ description: 'Poll it: GET .../parse/{parse_id}' }),
  callback_signing_secret: Type.Optional(Type.String({ description: 'With a callback_url: the whsec_ secret that signs its callbacks' })),
  _svc: SvcWithUsage,
}, { description: 'Queued: poll status_url' });

/** GET .../parse/{parse_id}. */
export const ParseStatusResponse = Type.Object({
  ...parseFields,
  callback_signing_secret: Type.Optional(Type.String({ description: 'With a callback_url: the whsec_ secret that signs its callbacks' })),
}, { description: 'The parse record' });

/** One callback delivery attempt (views.ts deliveryView). */
export const DeliverySchema = Type.Object({
  attempt_number: Type.Integer({ minimum: 1 }),
  status: Type.Union([Type.Literal('success'), Type.Literal('failed')]),
  http_status: Nullable(Type.Integer({ description: 'null when no answer came (timeout, refused connection...)' })),
  last_error: Nullable(Type.String()),
  trigger: Type.Union([Type.Literal('automatic'), Type.Literal('replay')]),
  created_at: IsoTime(),
});

export const DeliveriesResponse = Type.Object({
  status: Success,
  parse_id: Type.String(),
  deliveries: Type.Array(DeliverySchema, { description: 'Newest first' }),
  total: Type.Integer({ minimum: 0 }),
}, { description: 'Callback delivery attempts' });

export const ReplayResponse = Type.Object({ status: Success, parse_id: Type.String(), delivery: DeliverySchema }, { description: 'The replay\'s delivery attempt' });

export const BlobSearchHit = Type.Object({
  title: Type.String({ description: 'File name (or blob_id) and where in it' }),
  url: Type.String({ description: 'The blob\'s download URL' }),
  snippet: Type.String(),
  source: Type.Literal('blob'),
  credibility_score: Type.Number(),
  published_date: Type.Null(),
  similarity: Type.Number({ minimum: 0, maximum: 1 }),
  blob_id: Type.String(),
  parse_id: Type.String(),
  chunk_index: Type.Integer({ minimum: 0 }),
  location: ChunkLocationSchema,
  content_type: Type.String(),
  content_trust: Type.Literal('untrusted_data'),
});

export const BlobSearchResponse = Type.Object({
  status: Success,
  query: Type.String(),
  provider_used: Type.Literal('vector'),
  results: Type.Array(BlobSearchHit),
  usage: Nullable(SearchUsageSchema),
  cached: Type.Boolean(),
  response_time_ms: Type.Integer({ minimum: 0 }),
  pending_embeddings: Type.Integer({ minimum: 0, description: 'Chunks not yet searchable by meaning (found by their words all the same); 0: complete' }),
  _svc: Type.Object({
    ...SvcEnvelopeSchema.properties,
    search_id: Type.String({ description: 'Refer to this search in POST /v1/feedback' }),
    usage: Type.Optional(UsageSnapshotSchema),
  }, { additionalProperties: true }),
}, { description: 'Matching chunks of your parsed blobs' });

/** POST /internal/queue/parse. */
export const QueuePushResponse = Type.Object({
  status: Success,
  parse_id: Type.String(),
  accepted: Type.Boolean({ description: 'true: run here now; false: already finished or running elsewhere' }),
  state: Type.String({ description: 'The queue job\'s state: pending, running, done or dead' }),
  outcome: Type.String({ description: 'ran, busy or terminal' }),
}, { description: 'The message was accepted, or its job had already finished or is running elsewhere' });
