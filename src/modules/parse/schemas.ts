import { Type } from 'typebox';
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

