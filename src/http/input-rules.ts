import { NOT_BLANK_PATTERN } from '../lib/text';
import type { InputRule } from './route-config';

/** A text field the handler refuses when blank (isBlank, src/lib/text.ts). */
export const notBlank = (part: InputRule['part'], field: string): InputRule => ({ part, field, schema: { pattern: NOT_BLANK_PATTERN } });

/** A search q the handler requires and refuses when blank, with the route's own *_QUERY_REQUIRED. */
export const searchQuery: InputRule = { part: 'querystring', field: 'q', required: true, schema: { minLength: 1, pattern: NOT_BLANK_PATTERN } };
