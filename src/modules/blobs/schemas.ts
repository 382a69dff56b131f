import { Type } from 'typebox';
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
