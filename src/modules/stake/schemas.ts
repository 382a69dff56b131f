import { Type } from 'typebox';
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
