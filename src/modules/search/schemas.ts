import { Type } from 'typebox';
import { Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { SearchUsageSchema } from '../usage/schemas';

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 500, description: 'Query, 1 to 500 characters' }),
  num_results: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 10, description: 'Results wanted, 1 to 20 (default 10); a provider may return fewer' })),
});

// ---- responses (objects closed: src/http/response-schemas.ts) ----

/** GET /v1/search. */
export const SearchResponse = Type.Object({
  status: Type.String({ description: 'success' }),
  query: Type.String(),
  provider_used: Type.String(),
  results: Type.Array(Type.Object({
    title: Type.String(),
    url: Type.String(),
    snippet: Type.String(),
    source: Type.String({ description: 'The result\'s host name' }),
    credibility_score: Type.Number({ minimum: 0.5, maximum: 1 }),
    published_date: Nullable(Type.String({ description: 'ISO 8601, when the provider gives one' })),
  })),
  usage: SearchUsageSchema,
  cached: Type.Boolean(),
  response_time_ms: Type.Integer(),
  /** The service envelope with this search's search_id and billing's usage of the call. */
  _svc: SvcEnvelopeSchema,
}, { description: 'Web results with credibility scores, and your search usage' });
