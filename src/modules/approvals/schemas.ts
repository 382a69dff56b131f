import { Type } from 'typebox';
import { IsoTime, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { MAX_NOTE_CHARS } from '../feedback/schemas';

export { MAX_NOTE_CHARS };

export const DECISIONS = ['approved', 'denied'] as const;
export const RISK_CLASSES = ['low', 'high'] as const;
export type Decision = (typeof DECISIONS)[number];
/** Characters (Unicode code points) of the free-text fields. */
export const MAX_ACTION_CHARS = 200;
export const MAX_APPROVER_CHARS = 200;
export const MAX_TOOL_CHARS = 128;
/** How far ahead of the server's clock a decided_at may be (clock skew between hosts). */
export const DECIDED_AT_SKEW_MS = 5 * 60_000;

// The note length is checked by the service, so that a long note is NOTE_TOO_LONG and a wrong type a
// plain validation failure; likewise an all-whitespace action and the time of decided_at.
export const ApprovalBody = Type.Object({
  action: Type.String({ minLength: 1, maxLength: MAX_ACTION_CHARS, description: `What the human was asked to approve, e.g. "send_email to finance@example.com"; 1 to ${MAX_ACTION_CHARS} characters` }),
  decision: Type.Union(DECISIONS.map((v) => Type.Literal(v)), { description: 'approved or denied' }),
  approver: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: MAX_APPROVER_CHARS }), Type.Null()], {
    description: `Who decided, as you name them (declared, not verified); at most ${MAX_APPROVER_CHARS} characters`,
  })),
  tool: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: MAX_TOOL_CHARS }), Type.Null()], {
    description: `The tool the approval was for, if any; at most ${MAX_TOOL_CHARS} characters`,
  })),
  risk_class: Type.Optional(Type.Union([...RISK_CLASSES.map((v) => Type.Literal(v)), Type.Null()], {
    description: 'low or high, as the tool passport declares it (not verified)',
  })),
  note: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: `At most ${MAX_NOTE_CHARS} characters; no secrets or personal data` })),
  decided_at: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()], {
    description: 'When the human decided (ISO 8601 with a time zone, e.g. 2026-11-26T09:30:00Z); default: now. Not in the future.',
  })),
});

export const ApprovalValidationCodes = {
  'body.action': { status: 422, code: 'INVALID_APPROVAL_ACTION', message: `action is required: a non-empty string of at most ${MAX_ACTION_CHARS} characters` },
  'body.decision': { status: 422, code: 'INVALID_APPROVAL_DECISION', message: 'decision is required: approved or denied' },
  'body.decided_at': { status: 422, code: 'INVALID_DECIDED_AT', message: 'decided_at is an ISO 8601 date-time with a time zone (e.g. 2026-11-26T09:30:00Z), not in the future' },
};

export const ApprovalListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Events per page, 1 to 100 (default 20)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of the previous page' })),
  decision: Type.Optional(Type.Union(DECISIONS.map((v) => Type.Literal(v)), { description: 'Only events with this decision' })),
});

export const ApprovalListValidationCodes = {
  'querystring.cursor': { status: 400, code: 'INVALID_APPROVAL_CURSOR', message: 'cursor is not one this list handed out; start again without it' },
};

// ---- responses ----

/** One approval event as the routes answer it (service.ts view). */
export const ApprovalEvent = Type.Object({
  approval_id: Type.String(),
  action: Type.String(),
  decision: Type.String({ description: 'approved or denied' }),
  approver: Nullable(Type.String()),
  tool: Nullable(Type.String()),
  risk_class: Nullable(Type.String({ description: 'low or high, as declared' })),
  note: Nullable(Type.String()),
  decided_at: IsoTime('When the human decided'),
  created_at: IsoTime('When svc recorded the event'),
});

/** POST /v1/me/approval-events (201): the event recorded. */
export const ApprovalRecorded = Type.Object({
  status: Type.String({ description: 'success' }),
  ...ApprovalEvent.properties,
  _svc: SvcEnvelopeSchema,
});

/** GET /v1/me/approval-events: a page of events, newest first, with this UTC month's cap. */
export const ApprovalPage = Type.Object({
  status: Type.String({ description: 'success' }),
  events: Type.Array(ApprovalEvent),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last' })),
  month: Type.String({ description: 'The UTC month the cap counts (YYYY-MM)' }),
  used_this_month: Type.Integer(),
  limit: Type.Integer({ description: 'Approval events per UTC month for your tier' }),
  remaining: Type.Integer(),
  resets_at: IsoTime('When the next UTC month starts'),
});
