import { Type } from 'typebox';

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 500, description: 'Query, 1 to 500 characters' }),
  num_results: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 10, description: 'Results wanted, 1 to 20 (default 10); a provider may return fewer' })),
});
