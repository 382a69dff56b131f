/**
 * Discovery routes: capabilities, guide, agent template, community statistics, agent cards and
 * the ai-agent discovery document. All public; capabilities reads an optional Bearer.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config';
import type { IdentityService } from '../identity/service';
import { agentCardOf, aiAgentDocument, svcAgentCard, type PassportView } from './agent-card';
import type { BlockContext } from './blocks-core';
import { capabilitiesDocument } from './capabilities';
import { agentTemplate, guideDocument } from './guide';
import { hostFeatures } from './host-features';
import { operatorTermsUrl, termsDocument } from './terms';
import type { RouteTable } from './route-table';
import {
  AgentCardSchema, AgentTemplateSchema, AiAgentDocumentSchema, CapabilitiesSchema, CommunitySchema, GuideSchema, RedirectSchema, SvcAgentCardSchema, TermsSchema,
} from './schemas';

export interface DiscoveryDeps {
  config: Config;
  table: RouteTable;
  identity: IdentityService;
  trustLog?: BlockContext['trustLog'];
}

export const discoveryRoutes = (deps: DiscoveryDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { config, table, identity } = deps;
  const baseUrl = config.core.baseUrl;
  const ctx = { config, table, baseUrl, trustLog: deps.trustLog };

  app.get('/v1/capabilities', {
    schema: { summary: 'Everything this instance offers: endpoints, auth, limits, tiers, pricing, trust layer, MCP', tags: ['discovery'], response: { 200: CapabilitiesSchema } },
    config: { auth: 'optional' },
  }, async (request) => capabilitiesDocument(ctx, request.auth));

  app.get('/v1/guide', {
    schema: { summary: 'Step-by-step guide: each step with the request to make', tags: ['discovery'], response: { 200: GuideSchema } },
    config: { auth: 'none' },
  }, async () => guideDocument(table, baseUrl, hostFeatures(config)));

  app.get('/v1/agent-template', {
    schema: { summary: 'Configuration template an agent fills in', tags: ['discovery'], response: { 200: AgentTemplateSchema } },
    config: { auth: 'none' },
  }, async () => agentTemplate(baseUrl, table, hostFeatures(config)));

  app.get('/terms', {
    schema: {
      summary: 'Terms of service (what agree_to_terms accepts); a redirect when the operator set SVC_TERMS_URL',
      tags: ['discovery'],
      response: { 200: TermsSchema, 302: RedirectSchema },
    },
    config: { auth: 'none', success: [200, 302] },
  }, async (_request, reply) => {
    const elsewhere = operatorTermsUrl(config);
    if (elsewhere) return reply.redirect(elsewhere, 302);
    return termsDocument(config);
  });

  app.get('/v1/community', {
    schema: { summary: 'The four founding-period statistics', tags: ['discovery'], response: { 200: CommunitySchema } },
    config: { auth: 'none' },
  }, async () => ({ status: 'success' as const, ...(await identity.communityStats()) }));

  app.get('/v1/agents/:agent_id/agent-card', {
    schema: {
      summary: 'A2A agent card of an agent, synthesized from its passport (minimal unless listed with a bio)',
      tags: ['discovery'],
      params: Type.Object({ agent_id: Type.String({ maxLength: 64 }) }),
      response: { 200: AgentCardSchema },
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => {
    const passport = (await identity.publicPassport(request.params.agent_id)) as PassportView;
    const agent = await identity.getAgent(passport.agent_id);
    return agentCardOf(passport, baseUrl, agent?.agent_card_url ?? null);
  });

  app.get('/.well-known/agent-card.json', {
    schema: { summary: 'A2A v1.0 agent card of svc itself', tags: ['discovery'], response: { 200: SvcAgentCardSchema } },
    config: { auth: 'none' },
  }, async () => svcAgentCard(baseUrl, table));

  app.get('/.well-known/ai-agent.json', {
    schema: { summary: 'Discovery document: where everything else is', tags: ['discovery'], response: { 200: AiAgentDocumentSchema } },
    config: { auth: 'none' },
  }, async () => aiAgentDocument(baseUrl));

  // The base address itself: an agent that knows only it finds everything else from here.
  app.get('/', {
    schema: { summary: 'The base address: the discovery document (as /.well-known/ai-agent.json)', tags: ['discovery'], response: { 200: AiAgentDocumentSchema } },
    config: { auth: 'none' },
  }, async () => aiAgentDocument(baseUrl));
};
