import { Type } from 'typebox';

export const KEY_PATTERN = '^[a-zA-Z0-9._:-]{1,128}$';
export const IMPORTANCE = ['critical', 'high', 'normal', 'low'] as const;
export type Importance = (typeof IMPORTANCE)[number];
export const IMPORTANCE_RANK: Record<Importance, number> = { critical: 4, high: 3, normal: 2, low: 1 };
/** 512 KB of UTF-8, measured on the value serialized compactly (JSON.stringify). */
export const MAX_VALUE_BYTES = 512 * 1024;
/** About ten years: keeps expires_at far inside safe integers. */
export const MAX_TTL_SECONDS = 315_576_000;

const ImportanceSchema = Type.Union(IMPORTANCE.map((v) => Type.Literal(v)), { description: 'critical, high, normal or low' });

export const KeyParams = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 128, pattern: KEY_PATTERN, description: '1 to 128 characters of [a-zA-Z0-9-_.:]; one path segment' }),
});

export const PutBody = Type.Object({
  value: Type.Unknown({ description: 'Any JSON; at most 512 KB UTF-8 once serialized' }),
  ttl: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TTL_SECONDS, description: 'Seconds until the entry expires (then it reads as absent)' })),
  importance: Type.Optional(ImportanceSchema),
  source: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()], { description: 'Provenance label, at most 255 characters' })),
  confidence: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: '0.0 to 1.0, default 1.0' })),
  derived_from: Type.Optional(Type.Object({
    // Versions are exact integers: past 2^53 a JSON number no longer is (9007199254740993 reads as ...992).
    start_version: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    end_version: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  }, { description: 'Inclusive range of source versions; end_version >= start_version' })),
});

export const PutValidationCodes = {
  'params.key': { status: 422, code: 'MEMORY_KEY_INVALID', message: 'key must be 1 to 128 characters of [a-zA-Z0-9-_.:] (one path segment; use . or : instead of /)' },
  'body.derived_from': { status: 422, code: 'MEMORY_DERIVED_FROM_INVALID', message: 'derived_from must be {start_version: integer >= 1, end_version: integer >= start_version}' },
};
// A missing start/end_version is reported by the validator under its own name.
Object.assign(PutValidationCodes, {
  'body.start_version': PutValidationCodes['body.derived_from'],
  'body.end_version': PutValidationCodes['body.derived_from'],
});
export const KeyValidationCodes = { 'params.key': PutValidationCodes['params.key'] };

const importanceQueryCode = { status: 422, code: 'MEMORY_KEY_INVALID', message: 'importance must be one of critical, high, normal, low' };

export const ListQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  prefix: Type.Optional(Type.String({ maxLength: 128, pattern: '^[a-zA-Z0-9._:-]*$', description: 'Only keys starting with this (case-sensitive)' })),
  importance: Type.Optional(ImportanceSchema),
});
export const ListValidationCodes = {
  'querystring.importance': importanceQueryCode,
  'querystring.prefix': { status: 422, code: 'MEMORY_KEY_INVALID', message: 'prefix must be at most 128 characters of [a-zA-Z0-9-_.:]' },
};

export const ContextQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  importance: Type.Optional(ImportanceSchema),
});
export const ContextValidationCodes = { 'querystring.importance': importanceQueryCode };

export const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 500, description: 'What to look for, 1 to 500 characters; embedded server-side' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })),
  importance: Type.Optional(ImportanceSchema),
  threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 0.7 })),
});
export const SearchValidationCodes = {
  'querystring.importance': importanceQueryCode,
};
