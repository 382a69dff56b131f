import { Type } from 'typebox';
import { errorResponses, IsoTime, Nullable } from '../../http/response-schemas';
import { BLOB_ID_PATTERN } from './ids';

export const BlobParams = Type.Object({
  blob_id: Type.String({ pattern: BLOB_ID_PATTERN, description: 'b_ followed by 16 lower-case hex characters' }),
});

/** A malformed blob id looks exactly like a missing one. */
export const BlobIdCodes = {
  'params.blob_id': { status: 404, code: 'BLOB_NOT_FOUND', message: 'No such blob (a blob_id is b_ followed by 16 hex characters)' },
};

export const ListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: '1 to 100, default 50' })),
});

export const signedUrlQuery = (max: number) => Type.Object({
  expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: max, description: `Seconds the URL stays valid: 1 to ${max}` })),
});

export const DownloadQuery = Type.Object({
  agent_id: Type.Optional(Type.String({ maxLength: 64 })),
  expires: Type.Optional(Type.Integer({ minimum: 0, description: 'Unix seconds after which the URL is refused' })),
  signature: Type.Optional(Type.String({ maxLength: 128 })),
});

// ---- Responses ----

/** The latest parse of a blob, in its metadata and list items (null when never parsed). */
export const ParseSummarySchema = Type.Object({
  parse_id: Type.String({ format: 'uuid' }),
  status: Type.String({ description: 'queued, running, complete or failed' }),
  created_at: IsoTime(),
  completed_at: Nullable(IsoTime()),
});

/** A blob as list items and GET .../meta show it (views.ts). */
const blobFields = {
  blob_id: Type.String({ description: 'b_ followed by 16 lower-case hex characters' }),
  size_bytes: Type.Integer({ minimum: 0 }),
  content_type: Type.String({ description: 'The media type stored with the bytes' }),
  sha256: Type.String({ description: 'Hex SHA-256 of the bytes (also the ETag of a download)' }),
  filename: Nullable(Type.String(), { description: 'The multipart file name, or null' }),
  created_at: IsoTime(),
  updated_at: IsoTime(),
  parse: Nullable(ParseSummarySchema, { description: 'The latest parse; null when never parsed' }),
};
export const BlobItem = Type.Object(blobFields);

/** PUT /v1/blobs: 201 new bytes, 200 the same bytes again (same blob_id). */
export const UploadResponse = Type.Object({
  status: Type.Literal('success'),
  blob_id: blobFields.blob_id,
  size_bytes: blobFields.size_bytes,
  content_type: blobFields.content_type,
  sha256: blobFields.sha256,
}, { description: 'The stored blob (201 new bytes, 200 the same bytes again)' });

export const BlobListResponse = Type.Object({
  status: Type.Literal('success'),
  blobs: Type.Array(BlobItem, { description: 'Newest first' }),
  total: Type.Integer({ minimum: 0, description: 'Active blobs of the agent' }),
  page: Type.Integer({ minimum: 1 }),
  per_page: Type.Integer({ minimum: 1 }),
}, { description: 'A page of your blobs' });

export const BlobMetaResponse = Type.Object({ status: Type.Literal('success'), ...blobFields }, { description: 'The blob\'s metadata' });

export const SignedUrlResponse = Type.Object({
  status: Type.Literal('success'),
  blob_id: blobFields.blob_id,
  url: Type.String({ description: 'GET (or HEAD) it without a key until expires_at' }),
  expires_in: Type.Integer({ minimum: 1, description: 'Seconds the URL stays valid' }),
  expires_at: IsoTime('When the URL stops working (whole seconds)'),
}, { description: 'A signed read URL' });

/** 204: no body. */
export const NoContent = (description: string) => Type.Unsafe<void>({ type: 'null', description });

/** The bytes of a download: the blob's own media type (206 with several ranges: multipart/byteranges). */
const bytes = (description: string) => ({
  description,
  content: { '*/*': { schema: Type.String({ format: 'binary', description: 'The bytes as stored' }) } },
});

/** GET/HEAD /v1/blobs/{blob_id} and .../download: bytes, not JSON; the errors are JSON. */
export const downloadResponses = (...errors: number[]) => ({
  200: bytes('The whole blob under its stored Content-Type (HEAD: the headers only)'),
  206: bytes('Partial content: one range under the stored Content-Type, several as multipart/byteranges'),
  304: Type.Null({ description: 'Not modified (If-None-Match matched the ETag): no body' }),
  ...errorResponses(...errors),
});
