import { Type } from 'typebox';
import { IsoTime, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { UUID_PATTERN } from '../../lib/ids';
import { EpochView } from '../trust/schemas';
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

// ---- responses ----

const Status = Type.String({ description: 'success' });
const Interval = Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: '95 % equal-tailed credible interval [low, high]' });

/** The reputation object (model.ts reputationObject): the history, the passport and the agent card show it. */
export const ReputationObject = Type.Object({
  score: Type.Number({ description: 'Beta mean alpha/(alpha+beta), 6 decimals' }),
  status: Type.String({ description: 'scored, or insufficient_data below 3 counted interactions' }),
  variance: Type.Number(),
  confidence_interval: Interval,
  beta_alpha: Type.Number(),
  beta_beta: Type.Number(),
  event_count: Type.Integer(),
  signal_count: Type.Integer(),
  beta_half_life_days: Type.Integer(),
  scoring_model: Type.String(),
  decay_half_life_days: Type.Integer(),
  last_updated: Nullable(IsoTime()),
  notice: Type.String(),
});

/** A category's sub-signal (model.ts subSignal); null below 3 interactions in the 90-day window. */
export const SubSignal = Nullable(Type.Object({
  score: Type.Number(),
  beta_alpha: Type.Number(),
  beta_beta: Type.Number(),
  confidence_interval: Interval,
  interaction_count: Type.Integer(),
  decay: Type.String({ description: 'linear_90_days' }),
}));

/** A directory row's sub-signal (model.ts subSignalPoint): the same figures without the credible interval. */
export const SubSignalPoint = Nullable(Type.Object({
  score: Type.Number(),
  beta_alpha: Type.Number(),
  beta_beta: Type.Number(),
  interaction_count: Type.Integer(),
  decay: Type.String({ description: 'linear_90_days' }),
}));

export const SubSignalPoints = Type.Object(
  Object.fromEntries(CATEGORIES.map((c) => [c, SubSignalPoint])) as Record<(typeof CATEGORIES)[number], typeof SubSignalPoint>,
  { description: 'Per category, null below 3 interactions in the 90-day window; only when the agent\'s visibility is decomposed' },
);

/** Per category; only for an agent whose sub-signal visibility is decomposed. */
export const SubSignals = Type.Object(Object.fromEntries(CATEGORIES.map((c) => [c, SubSignal])) as Record<(typeof CATEGORIES)[number], typeof SubSignal>);

/** POST /v1/feedback/interaction (201 new, 200 the rating already given). */
export const InteractionResponse = Type.Object({
  status: Status,
  duplicate: Type.Boolean({ description: 'true: this rater already rated this interaction; the first rating stands' }),
  event_id: Type.String(),
  log_index: Type.Integer(),
  leaf_hash: Type.Optional(Type.String({ description: 'RFC 9162 leaf hash of the rating\'s trust log entry (base64)' })),
  subject_agent_id: Type.String(),
  epoch: Type.Integer({ description: 'The subject\'s custody epoch' }),
  outcome: Type.String(),
  category: Type.String(),
  rater_weight: Type.Number({ description: '1 for a staked, sponsored or established rater, else 0.5' }),
  created_at: IsoTime(),
  _svc: SvcEnvelopeSchema,
});

/** A rated event in the history (service.ts eventView). */
export const ReputationEventView = Type.Object({
  event_id: Type.String(),
  log_index: Type.Integer(),
  rater_agent_id: Type.String(),
  ref_type: Type.String(),
  ref_id: Type.String(),
  outcome: Type.String(),
  category: Type.String(),
  rater_weight: Type.Number(),
  weight_now: Type.Number({ description: 'rater_weight after the 30-day half-life decay as of as_of; 0 when suppressed' }),
  suppressed: Type.Boolean({ description: 'An upheld dispute set its weight to 0' }),
  created_at: IsoTime(),
});

export const HistoryResponse = Type.Object({
  status: Status,
  agent_id: Type.String(),
  epoch: Type.Integer({ description: 'The epoch shown' }),
  current_epoch: Type.Integer(),
  as_of: IsoTime('Now for the open epoch, its close for a closed one'),
  epochs: Type.Array(EpochView),
  reputation: ReputationObject,
  reputation_sub_signals: Type.Optional(SubSignals),
  events: Type.Optional(Type.Array(ReputationEventView, { description: 'With include_events: newest first' })),
  next_cursor: Type.Optional(Nullable(Type.String())),
});

export const DisputeResponse = Type.Object({
  status: Status,
  dispute_id: Type.String(),
  event_id: Type.String(),
  dispute_status: Type.String({ description: 'open' }),
  filed_at: IsoTime(),
  log_index: Type.Integer(),
  _svc: SvcEnvelopeSchema,
});

export const DecisionResponse = Type.Object({
  status: Status,
  dispute_id: Type.String(),
  event_id: Type.String(),
  dispute_status: Type.String({ description: 'upheld or dismissed' }),
  decided_at: IsoTime(),
  log_index: Type.Integer(),
  event_weight: Nullable(Type.Number({ description: 'The event\'s weight now: 0 when upheld' })),
});
