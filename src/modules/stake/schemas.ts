import { Type } from 'typebox';
import { IsoTime, Nullable, SvcEnvelopeSchema } from '../../http/response-schemas';
import { MAX_SLASH_CREDITS, STAKE_TIERS, STAKE_TIER_CREDITS } from './rules';

export const StakeBody = Type.Object({
  tier: Type.Union(STAKE_TIERS.map((t) => Type.Literal(t)), {
    description: `Stake tier: ${STAKE_TIERS.map((t) => `${t} ${STAKE_TIER_CREDITS[t].toLocaleString('en-US')} credits`).join(', ')}; a higher tier than the one held locks the difference`,
  }),
}, { additionalProperties: false });

export const StakeValidationCodes = {
  'body.tier': { status: 422, code: 'STAKE_TIER_INVALID', message: `tier must be one of ${STAKE_TIERS.join(', ')}` },
};

/** No fields: an empty body, `{}` or no body at all. */
export const EmptyBody = Type.Optional(Type.Object({}, { additionalProperties: false }));

export const SponsorParams = Type.Object({
  sponsor_id: Type.String({ maxLength: 64, description: 'The sponsor: the bearer\'s own agent id' }),
  ward_id: Type.String({ maxLength: 64, description: 'The agent sponsored' }),
});

export const SlashParams = Type.Object({ agent_id: Type.String({ maxLength: 64 }) });

export const SlashBody = Type.Object({
  credits: Type.Integer({ minimum: 1, maximum: MAX_SLASH_CREDITS, description: 'Credits to take from the agent\'s stake (whole credits); a stake holding less gives what it has' }),
  reason: Type.String({ minLength: 1, maxLength: 1000, description: 'Why (kept with the slash; its SHA-256 is in the trust log)' }),
  harmed_agent_id: Type.String({ maxLength: 64, description: 'The agent the slash compensates: 0.7 of what is taken, as credit that never expires' }),
}, { additionalProperties: false });

export const SlashValidationCodes = {
  'body.credits': { status: 422, code: 'SLASH_CREDITS_INVALID', message: `credits must be a whole number from 1 to ${MAX_SLASH_CREDITS}` },
  'body.reason': { status: 422, code: 'SLASH_REASON_INVALID', message: 'reason is required: 1 to 1000 characters' },
  'body.harmed_agent_id': { status: 422, code: 'SLASH_HARMED_AGENT_INVALID', message: 'harmed_agent_id is required: an agent id' },
};

// ---- responses ----

const Status = Type.String({ description: 'success' });
const Usd = (description: string) => Type.String({ description: `${description} (credit as USD, 4 decimals)` });

/** A stake (service.ts stakeView). */
export const StakeView = Type.Object({
  stake_id: Type.String(),
  tier: Type.String({ description: STAKE_TIERS.join(', ') }),
  status: Type.String({ description: 'active, cooling, released or slashed' }),
  credits_staked_usd: Usd('Credit at stake now'),
  staked_at: IsoTime(),
  locked_until: IsoTime('Unstaking is refused before this'),
  cooling_until: Nullable(IsoTime('While cooling: when the credit returns')),
  ended_at: Nullable(IsoTime()),
  credits_returned_usd: Nullable(Usd('Credit returned to the balance when the stake was released')),
  log_index: Type.Integer({ description: 'The trust log entry of the last change' }),
});

/** A sponsorship (service.ts sponsorshipView). */
export const SponsorshipView = Type.Object({
  sponsorship_id: Type.String(),
  sponsor_agent_id: Type.String(),
  ward_agent_id: Type.String(),
  status: Type.String({ description: 'active, revoking (until revokes_at) or revoked' }),
  created_at: IsoTime(),
  revokes_at: Nullable(IsoTime()),
  ring_flagged: Type.Boolean({ description: 'On a ring of sponsorships: confers nothing' }),
  log_index: Type.Integer(),
});

export const StakeResponse = Type.Object({
  status: Status,
  duplicate: Type.Boolean({ description: 'true: the stake already held this tier; nothing was locked' }),
  credits_locked_now_usd: Usd('Credit locked by this request'),
  stake: StakeView,
  _svc: SvcEnvelopeSchema,
});

export const UnstakeResponse = Type.Object({
  status: Status,
  duplicate: Type.Boolean({ description: 'true: the stake was already cooling' }),
  stake: StakeView,
  _svc: SvcEnvelopeSchema,
});

export const SponsorResponse = Type.Object({
  status: Status,
  duplicate: Type.Boolean(),
  sponsorship: SponsorshipView,
  ring: Type.Object({
    flagged: Type.Boolean({ description: 'This sponsorship is on a ring' }),
    sponsorship_ids: Type.Array(Type.String(), { description: 'Sponsorships this request flagged as a ring' }),
  }),
  _svc: SvcEnvelopeSchema,
});

export const SponsorRevokeResponse = Type.Object({
  status: Status,
  duplicate: Type.Boolean({ description: 'true: the revoke was already asked' }),
  sponsorship: SponsorshipView,
  _svc: SvcEnvelopeSchema,
});

export const SlashResponse = Type.Object({
  status: Status,
  slash_id: Type.String(),
  agent_id: Type.String(),
  harmed_agent_id: Type.String(),
  requested_credits: Type.Integer(),
  credits_taken_usd: Usd('Taken from the agent\'s and its sponsors\' stakes'),
  shortfall_usd: Usd('Asked of the agent\'s stake and not there'),
  harmed_credit_usd: Usd('Credited to the harmed agent'),
  insurance_usd: Usd('To the insurance pool'),
  burned_usd: Usd('Burned'),
  takes: Type.Array(Type.Object({
    agent_id: Type.String(),
    role: Type.String({ description: 'agent or sponsor' }),
    stake_id: Type.String(),
    taken_usd: Type.String(),
    harmed_usd: Type.String(),
    insurance_usd: Type.String(),
    burned_usd: Type.String(),
  })),
  decided_at: IsoTime(),
  log_index: Type.Integer(),
});
