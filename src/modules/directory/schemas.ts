import { Type } from 'typebox';
import { IsoTime, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { AGENT_TYPE_PATTERN, DOMAIN_PATTERN } from '../identity/schemas';
import { SubSignalPoints } from '../reputation/schemas';

export const VouchParams = Type.Object({ target_agent_id: Type.String({ maxLength: 64 }) });
export const VouchBody = Type.Object({
  skill: Type.String({ minLength: 1, maxLength: 64, description: 'A skill the target lists in its passport (exact label)' }),
});

export const DIRECTORY_PAGE_MAX = 100;
export const DIRECTORY_PAGE_DEFAULT = 20;

export const DirectoryQuery = Type.Object({
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of the previous page, opaque (omit on the first request); it continues the same walk and needs the same filters' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DIRECTORY_PAGE_MAX, default: DIRECTORY_PAGE_DEFAULT, description: `Agents per page, 1 to ${DIRECTORY_PAGE_MAX} (default ${DIRECTORY_PAGE_DEFAULT})` })),
  agent_type: Type.Optional(Type.String({ minLength: 1, maxLength: 32, pattern: AGENT_TYPE_PATTERN, description: 'Only agents that declared this agent_type (exact lowercase label)' })),
  domain: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: DOMAIN_PATTERN, description: 'Only agents that declared this domain (exact lowercase label)' })),
  bridge_only: Type.Optional(Type.Boolean({ default: false, description: 'true: only bridge agents (they declared an external agent_card_url)' })),
});

export const DirectoryValidationCodes = {
  'querystring.cursor': { status: 400, code: 'INVALID_DIRECTORY_CURSOR', message: 'cursor is not a next_cursor this directory handed out; start again without it' },
};

/** One directory row. Never an API key, owner identifier, PEM public key or balance: the serializer writes these fields only. */
export const DirectoryRow = Type.Object({
  agent_id: Type.String(),
  did: Nullable(Type.String()),
  agent_name: Type.String(),
  synthetic: Type.Boolean({ description: 'true: a founding profile from the operator\'s configuration, not a registered agent' }),
  bio: Nullable(Type.String()),
  skills: Type.Array(Type.String()),
  agent_type: Nullable(Type.String()),
  domain: Nullable(Type.String()),
  bridge: Type.Boolean({ description: 'The agent declared an external agent card (agent_card_url)' }),
  agent_card_url: Nullable(Type.String()),
  a2a_agent_card_url: Nullable(Type.String()),
  passport_url: Nullable(Type.String()),
  trust_summary: Type.Object({
    trust_levels: Type.Array(Type.String(), { description: 'Platform-derived levels (floor, staked, sponsored, established)' }),
    custody_epoch: Nullable(Type.Integer()),
    vouch_count: Type.Integer({ description: 'Active skill vouches in the current custody epoch' }),
  }),
  reputation_score: Nullable(Type.Number({ description: 'The passport\'s reputation.score now (null for a synthetic profile)' })),
  reputation_status: Type.String(),
  reputation_sub_signals: Type.Optional(SubSignalPoints),
  rank_score: Type.Number({ description: 'The score the order uses (the walk\'s version of the directory)' }),
  registered_at: Type.String(),
});

export const DirectoryPage = Type.Object({
  status: Type.String(),
  agents: Type.Array(DirectoryRow),
  next_cursor: Nullable(Type.String()),
  limit: Type.Integer(),
  directory_version: Type.Integer(),
  walk_started_at: Type.String(),
  cursor_expires_at: Type.String(),
});

/** A skill vouch (vouches.ts view). */
const VouchFields = {
  vouch_id: Type.String(),
  target_agent_id: Type.String(),
  voucher_agent_id: Type.String(),
  skill: Type.String(),
  epoch: Type.Integer({ description: 'The target\'s custody epoch the vouch counts in' }),
  voucher_weight: Type.Number({ description: '1 for a staked, sponsored or established voucher, else 0.5' }),
  created_at: IsoTime(),
  log_index: Type.Integer({ description: 'The vouch.given trust log entry' }),
};

/** POST /v1/agents/{target_agent_id}/vouch (201 new, 200 the active vouch already given). */
export const VouchResponse = Type.Object({
  status: Type.String({ description: 'success' }),
  duplicate: Type.Boolean({ description: 'true: you already vouched for this skill; the first vouch stands' }),
  ...VouchFields,
  revoked_at: Nullable(IsoTime(), { description: 'null: the vouch is active' }),
  _svc: SvcEnvelopeSchema,
});

/** POST /v1/agents/{target_agent_id}/vouch/revoke. */
export const VouchRevokeResponse = Type.Object({
  status: Type.String({ description: 'success' }),
  ...VouchFields,
  revoked_at: IsoTime(),
  revoked_log_index: Type.Integer({ description: 'The vouch.revoked trust log entry' }),
  _svc: SvcEnvelopeSchema,
});
