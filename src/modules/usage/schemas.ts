import { Type } from 'typebox';

export const ActivityQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1 to 100 (default 20)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of the previous page' })),
  kinds: Type.Optional(Type.String({
    pattern: '^(browse|feedback|approval)(,(browse|feedback|approval))*$',
    description: 'Comma-separated kinds to include (browse, feedback, approval); default all',
  })),
});

export const ActivityValidationCodes = {
  'querystring.cursor': { status: 400, code: 'INVALID_ACTIVITY_CURSOR', message: 'cursor is not one this feed handed out; start again without it' },
  'querystring.kinds': { status: 422, code: 'INVALID_ACTIVITY_KIND', message: 'kinds is a comma-separated list of browse, feedback, approval' },
};
