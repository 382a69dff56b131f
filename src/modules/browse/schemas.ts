import { Type } from 'typebox';

// url and mode are checked by the service (spec codes INVALID_URL, BROWSE_MODE_UNSUPPORTED), so
// the schema only insists on an object; a wrong type is reported with the field's own code.
export const BrowseBody = Type.Object({
  url: Type.Optional(Type.Unknown({ description: 'Public http or https URL (required)' })),
  mode: Type.Optional(Type.Unknown({ description: 'static (default) or dynamic (headless Chromium; standard trust tier)' })),
});

export const BrowseIdParams = Type.Object({
  browse_id: Type.String({ maxLength: 64, description: 'browse_id of an earlier POST /v1/browse of yours' }),
});

export const BrowseIdValidationCodes = {
  'params.browse_id': { status: 404, code: 'BROWSE_NOT_FOUND', message: 'No browse record with this id' },
};
