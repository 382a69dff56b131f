import { Type } from 'typebox';
import { IsoTime, SvcEnvelopeSchema } from '../../http/response-schemas';
import { CapStandingFields } from '../usage/schemas';

export const REF_TYPES = ['search_id', 'memory_key', 'blob_id', 'parse_id', 'browse_id'] as const;
export const SIGNALS = ['helpful', 'unhelpful', 'wrong'] as const;
export type RefType = (typeof REF_TYPES)[number];
export type Signal = (typeof SIGNALS)[number];
/** A note is at most 500 characters (Unicode code points). */
export const MAX_NOTE_CHARS = 500;
/** ref_id is opaque and never looked up; the cap only keeps rows small (longest real ids are ~130 chars). */
export const MAX_REF_ID_CHARS = 256;

// The note length is checked by the service so that a long note is NOTE_TOO_LONG and a wrong type a
// plain validation failure; likewise an all-whitespace ref_id is refused there.
export const FeedbackBody = Type.Object({
  ref_type: Type.Union(REF_TYPES.map((v) => Type.Literal(v)), { description: 'search_id, memory_key, blob_id, parse_id or browse_id' }),
  ref_id: Type.String({ minLength: 1, maxLength: MAX_REF_ID_CHARS, description: 'The id the feedback is about; opaque, not checked against stored data' }),
  signal: Type.Union(SIGNALS.map((v) => Type.Literal(v)), { description: 'helpful, unhelpful or wrong' }),
  note: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'At most 500 characters; no secrets or personal data' })),
});

export const FeedbackValidationCodes = {
  'body.ref_type': { status: 422, code: 'INVALID_REF_TYPE', message: 'ref_type is required: one of search_id, memory_key, blob_id, parse_id, browse_id' },
  'body.ref_id': { status: 422, code: 'INVALID_REF_ID', message: `ref_id is required: a non-empty string of at most ${MAX_REF_ID_CHARS} characters` },
  'body.signal': { status: 422, code: 'INVALID_SIGNAL', message: 'signal is required: one of helpful, unhelpful, wrong' },
};

// ---- responses (objects closed: src/http/response-schemas.ts) ----

/** POST /v1/feedback (201). */
export const FeedbackCreated = Type.Object({
  status: Type.String({ description: 'success' }),
  feedback_id: Type.String(),
  created_at: IsoTime(),
  _svc: SvcEnvelopeSchema,
}, { description: 'Recorded' });

const SignalCounts = Type.Object({ total: Type.Integer(), helpful: Type.Integer(), unhelpful: Type.Integer(), wrong: Type.Integer() });

/** GET /v1/feedback/stats. */
export const FeedbackStats = Type.Object({
  status: Type.String({ description: 'success' }),
  last_7d: SignalCounts,
  last_30d: SignalCounts,
  by_ref_type: Type.Object(Object.fromEntries(REF_TYPES.map((r) => [r, SignalCounts])) as Record<(typeof REF_TYPES)[number], typeof SignalCounts>),
  by_ref_type_window: Type.String({ description: 'last_30d' }),
  ...CapStandingFields,
}, { description: 'Your feedback counts and this month\'s cap' });
