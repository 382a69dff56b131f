import { Type } from 'typebox';

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
