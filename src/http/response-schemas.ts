/**
 * Building blocks of the routes' response schemas (TypeBox). Every route declares the exact body of
 * each success status and the shared error body for each error status it can answer; the schemas
 * feed the OpenAPI document and Fastify's compiled serialiser, and in test mode every response a
 * route sends is validated against them (src/http/response-validation.ts).
 *
 * Conventions:
 * - Objects are closed: a field the route sends must be declared (the serialiser drops undeclared
 *   fields, and the test-mode check reports them). Say `additionalProperties: true` only where the
 *   body is open by design (a stored JSON value, `_svc`'s route-specific extras).
 * - A field that may be null is `Nullable(T)`; a field that may be absent is `Type.Optional(T)`.
 * - Times are ISO 8601 strings (`IsoTime`); money and counts are integers.
 * - A body that is not JSON is declared as content of its media type:
 *   `{ description, content: { 'text/html': { schema: { type: 'string' } } } }` (`TextContent`);
 *   a 204 as `NoContent`. A route whose success body has no schema by design says why in route
 *   config `responseSchemaExempt` (test/response-schemas.test.ts skips it).
 * - Error statuses: src/http/error-responses.ts adds ErrorBody for every status a route's
 *   configuration implies (auth, body, parameters, validationCodes, config.errors); declare a
 *   route's own error codes in `config.errors` and they are in its schema and the OpenAPI document.
 */
import { Type, type TSchema } from 'typebox';

/** T or null. */
export const Nullable = <T extends TSchema>(t: T, options: { description?: string } = {}) => Type.Union([t, Type.Null()], options);

/** An ISO 8601 UTC timestamp as svc writes it. */
export const IsoTime = (description?: string) => Type.String({ format: 'date-time', ...(description ? { description } : {}) });

/** The one error body: `{ error_code, message, ...fields the code documents }` (src/http/errors.ts). */
export const ErrorBody = Type.Object({
  error_code: Type.String({ description: 'Stable machine-readable code (see the spec\'s error table)' }),
  message: Type.String({ description: 'What went wrong and what to do, for a person' }),
}, { additionalProperties: true, $id: 'ErrorBody', title: 'Error' });

/** `{ [status]: ErrorBody }` for each error status given. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody]));
}

/** A 204: no body. */
export const NoContent = Type.Unsafe<void>({ type: 'null', description: 'No content' });

/** A success body that is not JSON: text of `mediaType` (HTML, plain text, NDJSON), described. */
export const TextContent = (mediaType: string, description: string) => ({
  description,
  content: { [mediaType]: { schema: { type: 'string' } } },
});

/** The founding-period statistics in `_svc.community` (src/http/envelope.ts CommunityStats). */
export const CommunityStatsSchema = Type.Object({
  agents_registered: Type.Integer(),
  agents_registered_last_7d: Type.Integer(),
  directory_listed: Type.Integer(),
  founding_period_ends_at: Type.String(),
  directory_synthetic_profiles: Type.Optional(Type.Integer()),
});

/** `_svc`: the service envelope (src/http/envelope.ts SvcEnvelope); routes may add fields of their own. */
export const SvcEnvelopeSchema = Type.Object({
  served_by: Type.String(),
  register_url: Type.String(),
  discover_url: Type.String(),
  guide_url: Type.String(),
  feedback_url: Type.String(),
  browse_url: Type.String(),
  terms_url: Type.String(),
  terms_version: Type.String(),
  tier_description: Type.Optional(Type.String()),
  community: CommunityStatsSchema,
}, { additionalProperties: true });
