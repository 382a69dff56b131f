import { Type } from 'typebox';
import { IsoTime, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';

export const BrowseBody = Type.Object({
  url: Type.String({ maxLength: 8192, description: 'Public http or https URL' }),
  mode: Type.Optional(Type.Union([Type.Literal('static'), Type.Literal('dynamic')], {
    description: 'static (default): fetch and extract; dynamic: render in headless Chromium first (standard trust tier)',
  })),
});

// Schema failures on these fields carry the API's codes; the service checks URL policy further.
export const BrowseValidationCodes = {
  'body.url': { status: 422, code: 'INVALID_URL', message: 'url is required: a public http or https URL of at most 8192 characters' },
  'body.mode': { status: 422, code: 'BROWSE_MODE_UNSUPPORTED', message: 'mode must be static or dynamic' },
};

export const BrowseIdParams = Type.Object({
  browse_id: Type.String({ maxLength: 64, description: 'browse_id of an earlier POST /v1/browse of yours' }),
});

export const BrowseIdValidationCodes = {
  'params.browse_id': { status: 404, code: 'BROWSE_NOT_FOUND', message: 'No browse record with this id' },
};

// ---- responses (objects closed: src/http/response-schemas.ts) ----

/** A browse record (service.ts BrowseRecord) with the service envelope; POST adds billing's usage to `_svc`. */
export const BrowseResponse = Type.Object({
  status: Type.String({ description: 'success' }),
  browse_id: Type.String(),
  url: Type.String(),
  final_url: Type.String({ description: 'After redirects' }),
  mode: Type.String({ description: 'static or dynamic' }),
  http_status: Type.Integer({ description: 'What the site answered (a 404 page is a completed browse)' }),
  content_type: Type.String(),
  title: Nullable(Type.String()),
  text: Type.String(),
  byline: Nullable(Type.String()),
  published_at: Nullable(Type.String({ description: 'ISO 8601 as the page states it' })),
  language: Nullable(Type.String({ description: 'BCP 47' })),
  site_name: Nullable(Type.String()),
  response_time_ms: Type.Integer(),
  fetched_at: IsoTime(),
  _svc: SvcEnvelopeSchema,
}, { description: 'The browse record: the page\'s title and text' });
