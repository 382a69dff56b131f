import { Type } from 'typebox';

const Index = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });
const Size = (description: string) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

export const EntriesQuery = Type.Object({
  start: Index('First index (inclusive)'),
  end: Type.Optional(Size('End index (exclusive); at most 1000 entries are returned, fewer at the end of the log')),
});

export const InclusionQuery = Type.Object({
  index: Index('Index of the entry'),
  tree_size: Size('Size of the tree the proof is for (the size of a checkpoint you hold)'),
});

export const ConsistencyQuery = Type.Object({
  first: Size('The older tree size'),
  second: Size('The newer tree size'),
});

export const RangeValidationCodes = {
  'querystring.*': { status: 422, code: 'TRUST_LOG_RANGE_INVALID', message: 'Log positions are whole numbers: start and index from 0, sizes from 1' },
};
