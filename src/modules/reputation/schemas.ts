import { Type } from 'typebox';
import { UUID_PATTERN } from '../../lib/ids';
import { CATEGORIES, OUTCOMES } from './model';

/** What a rated interaction refers to (opaque ids, not looked up). */
export const INTERACTION_REF_TYPES = ['task', 'message', 'tool_call', 'commons_entry', 'blob_id', 'external'] as const;
export const MAX_INTERACTION_REF_ID_CHARS = 256;
export const MAX_INTERACTION_NOTE_CHARS = 500;
export const MAX_DISPUTE_REASON_CHARS = 1000;

export const InteractionBody = Type.Object({
  subject_agent_id: Type.String({ pattern: UUID_PATTERN, description: 'The agent being rated (not yourself, not an agent of your owner)' }),
  ref_type: Type.Union(INTERACTION_REF_TYPES.map((v) => Type.Literal(v)), { description: `What the interaction was: ${INTERACTION_REF_TYPES.join(', ')}` }),
  ref_id: Type.String({ minLength: 1, maxLength: MAX_INTERACTION_REF_ID_CHARS, description: 'Your id of the interaction (opaque); one rating per (rater, subject, ref_type, ref_id), a repeat answers the first' }),
  outcome: Type.Union(OUTCOMES.map((v) => Type.Literal(v)), { description: 'approved (adds to alpha), error (adds to beta) or rejected (adds a quarter to beta)' }),
  category: Type.Union(CATEGORIES.map((v) => Type.Literal(v)), { description: `Sub-signal category: ${CATEGORIES.join(', ')}` }),
  note: Type.Optional(Type.Union([Type.String({ maxLength: MAX_INTERACTION_NOTE_CHARS }), Type.Null()], { description: 'Kept privately; the public log carries only its SHA-256' })),
});

export const InteractionValidationCodes = {
  'body.ref_type': { status: 422, code: 'INTERACTION_REF_TYPE_REQUIRED', message: `ref_type is required: one of ${INTERACTION_REF_TYPES.join(', ')}`, keywords: ['required'] },
  'body.ref_id': { status: 422, code: 'INTERACTION_REF_INVALID', message: `ref_id is required: a non-empty string of at most ${MAX_INTERACTION_REF_ID_CHARS} characters` },
  'body.subject_agent_id': { status: 422, code: 'VALIDATION_FAILED', message: 'subject_agent_id is required and must be an agent id (UUID)' },
};

export const HistoryQuery = Type.Object({
  epoch: Type.Optional(Type.Integer({ minimum: 1, description: 'A custody epoch (default: the current one)' })),
  include_events: Type.Optional(Type.Boolean({ default: false, description: 'List the epoch\'s rated events, newest first' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Events per page (include_events)' })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
});

export const DisputeBody = Type.Object({
  event_id: Type.String({ pattern: UUID_PATTERN, description: 'event_id of a reputation event of which you are the subject (from the history route)' }),
  reason: Type.String({ minLength: 1, maxLength: MAX_DISPUTE_REASON_CHARS, description: 'Why the event is wrong; kept for the admin, the public log carries its SHA-256' }),
});

export const DisputeValidationCodes = {
  'body.event_id': { status: 422, code: 'VALIDATION_FAILED', message: 'event_id is required and must be a reputation event id (UUID)' },
  'body.reason': { status: 422, code: 'DISPUTE_REASON_INVALID', message: `reason is required: 1 to ${MAX_DISPUTE_REASON_CHARS} characters` },
};

export const DecisionParams = Type.Object({ dispute_id: Type.String({ maxLength: 64 }) });
export const DecisionBody = Type.Object({
  decision: Type.Union([Type.Literal('upheld'), Type.Literal('dismissed')], { description: 'upheld: the event\'s weight becomes 0; dismissed: unchanged' }),
  note: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
});
