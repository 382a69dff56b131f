import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import { ApiError } from '../../http/errors';
import { notBlank } from '../../http/input-rules';
import { errorResponses } from '../../http/response-schemas';
import { isUuid } from '../../lib/ids';
import { formatUsd } from '../../lib/money';
import { isBlank, storableText } from '../../lib/text';
import {
  EmptyBody, SlashBody, SlashParams, SlashResponse, SlashValidationCodes, SponsorParams, SponsorResponse, SponsorRevokeResponse, StakeBody, StakeResponse,
  StakeValidationCodes, UnstakeResponse,
} from './schemas';
import type { StakeService } from './service';

/** An agent id from the path, or 404 AGENT_NOT_FOUND naming the parameter. */
const agentParam = (id: string, name: string) => {
  if (!isUuid(id)) throw new ApiError(404, 'AGENT_NOT_FOUND', `No agent with this ${name}`);
  return id.toLowerCase();
};

// The request has no body: none at all is the usual call (the schema still refuses a non-object one or unknown fields).
const noBody = async (request: { body: unknown }) => {
  request.body ??= {};
};

export const stakeRoutes = (deps: { stakes: StakeService; envelope: EnvelopeBuilder }): FastifyPluginAsyncTypebox => async (app) => {
  const { stakes, envelope } = deps;

  app.post('/v1/agents/passport/stake', {
    schema: {
      body: StakeBody, tags: ['trust'], response: { 201: StakeResponse, 200: StakeResponse, ...errorResponses(402, 403, 409) },
      summary: 'Stake credit (low 1,000, medium 10,000, high 50,000 credits of never-expiring credit) for at least 30 days: trust level staked; a higher tier locks the difference; appended to the trust log',
    },
    config: {
      auth: 'key', success: [201, 200], validationCodes: StakeValidationCodes, stagedRestricted: 'stake',
      errors: { 402: ['INSUFFICIENT_CREDITS'], 403: ['PASSPORT_REVOKED', 'STAGED_RESURRECTION_RESTRICTED'], 409: ['STAKE_COOLING', 'STAKE_TIER_LOWER'] },
    },
  }, async (request, reply) => {
    const r = await stakes.stake(agentOf(request).agentId, request.body.tier);
    return reply.code(r.created ? 201 : 200).send({
      status: 'success', duplicate: r.duplicate, credits_locked_now_usd: formatUsd(r.locked_units), stake: r.stake, _svc: await envelope.build(),
    });
  });

  app.post('/v1/agents/passport/unstake', {
    schema: {
      body: EmptyBody, tags: ['trust'], response: { 200: UnstakeResponse, ...errorResponses(404, 409) },
      summary: 'Unstake after the 30-day lock: 7 days of cooling (no longer staked), then the credit returns to your balance; no body; appended to the trust log',
    },
    config: { auth: 'key', errors: { 404: ['STAKE_NOT_FOUND'], 409: ['STAKE_LOCKED'] } },
    preValidation: noBody,
  }, async (request) => ({ status: 'success', ...await stakes.unstake(agentOf(request).agentId), _svc: await envelope.build() }));

  app.post('/v1/agents/:sponsor_id/sponsor/:ward_id', {
    schema: {
      params: SponsorParams, body: EmptyBody, tags: ['trust'], response: { 201: SponsorResponse, 200: SponsorResponse, ...errorResponses(403, 404, 409) },
      summary: 'Sponsor a ward with your stake (bearer is the sponsor; at most 5 wards in force): trust level sponsored for the ward; a ring of sponsorships is flagged and confers nothing; no body',
    },
    config: {
      auth: 'key', success: [201, 200],
      errors: {
        403: ['SPONSORSHIP_FORBIDDEN', 'SPONSORSHIP_INELIGIBLE', 'SPONSOR_NOT_STAKED', 'PASSPORT_REVOKED'], 404: ['AGENT_NOT_FOUND'],
        409: ['SPONSOR_WARD_LIMIT', 'SPONSORSHIP_REVOKE_PENDING'],
      },
    },
    preValidation: noBody,
  }, async (request, reply) => {
    const { sponsor_id: sponsor, ward_id: ward } = request.params;
    const r = await stakes.sponsor(agentOf(request).agentId, agentParam(sponsor, 'sponsor_id'), agentParam(ward, 'ward_id'));
    return reply.code(r.created ? 201 : 200).send({ status: 'success', duplicate: r.duplicate, sponsorship: r.sponsorship, ring: r.ring, _svc: await envelope.build() });
  });

  app.post('/v1/agents/:sponsor_id/sponsor/:ward_id/revoke', {
    schema: {
      params: SponsorParams, body: EmptyBody, tags: ['trust'], response: { 200: SponsorRevokeResponse, ...errorResponses(403, 404) },
      summary: 'Revoke a sponsorship (bearer is the sponsor): it takes effect 7 days later; no body',
    },
    config: { auth: 'key', errors: { 403: ['SPONSORSHIP_FORBIDDEN'], 404: ['AGENT_NOT_FOUND', 'SPONSORSHIP_NOT_FOUND'] } },
    preValidation: noBody,
  }, async (request) => {
    const { sponsor_id: sponsor, ward_id: ward } = request.params;
    return {
      status: 'success', ...await stakes.revokeSponsorship(agentOf(request).agentId, agentParam(sponsor, 'sponsor_id'), agentParam(ward, 'ward_id')),
      _svc: await envelope.build(),
    };
  });

  app.post('/admin/agents/:agent_id/slash', {
    schema: {
      params: SlashParams, body: SlashBody, tags: ['admin'], response: { 200: SlashResponse, ...errorResponses(404, 409, 422) },
      summary: 'Slash an agent\'s stake (admin): 0.7 to the harmed agent, 0.2 to the insurance pool, 0.1 burned; its sponsors lose 0.25 of the amount too; appended to the trust log',
    },
    config: {
      auth: 'admin', validationCodes: SlashValidationCodes, inputRules: [notBlank('body', 'reason')],
      errors: { 404: ['AGENT_NOT_FOUND'], 409: ['NOTHING_TO_SLASH'], 422: ['SLASH_CREDITS_INVALID', 'SLASH_REASON_INVALID', 'SLASH_HARMED_AGENT_INVALID'] },
    },
  }, async (request) => {
    const b = request.body;
    if (isBlank(b.reason)) throw new ApiError(422, 'SLASH_REASON_INVALID', 'reason must not be only whitespace or control characters', { field: 'body.reason' });
    const harmed = isUuid(b.harmed_agent_id) ? b.harmed_agent_id.toLowerCase() : '';
    return {
      status: 'success',
      ...await stakes.slash(agentParam(request.params.agent_id, 'agent_id'), { credits: b.credits, reason: storableText(b.reason), harmed_agent_id: harmed }),
    };
  });
};
