import { Type } from 'typebox';
import { KEY_PATTERN } from '../memory/schemas';

export const EntryIdParams = Type.Object({ entry_id: Type.String({ maxLength: 64 }) });

export const PublishBody = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 128, pattern: KEY_PATTERN, description: 'Topic of the entry: 1 to 128 characters of [a-zA-Z0-9-_.:], like a memory key' }),
  value: Type.Unknown({ description: 'Any JSON; at most 512 KB UTF-8 once serialized' }),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9][a-z0-9-_.]*$' }), { maxItems: 10, description: 'Up to 10 lower-case tags' })),
  source: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()], { description: 'Provenance label, at most 255 characters' })),
  confidence: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: '0.0 to 1.0, default 1.0' })),
});
export const PublishValidationCodes = {
  'body.key': { status: 422, code: 'MEMORY_KEY_INVALID', message: 'key must be 1 to 128 characters of [a-zA-Z0-9-_.:]' },
  'body.tags': { status: 422, code: 'COMMONS_TAGS_INVALID', message: 'tags: at most 10 strings of 1 to 32 characters [a-z0-9-_.], starting with a letter or digit' },
};

export const ListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  tag: Type.Optional(Type.String({ maxLength: 32 })),
  publisher: Type.Optional(Type.String({ maxLength: 64, description: 'Only entries of this agent id' })),
});

export const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 500 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })),
  threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 0.7 })),
});
/** A missing or blank q is COMMONS_QUERY_REQUIRED (the service); one over 500 characters, VALIDATION_FAILED. */
export const SearchValidationCodes = {};
