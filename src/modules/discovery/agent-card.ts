/**
 * A2A v1.0 agent cards: svc's own (/.well-known/agent-card.json) and one synthesized per agent
 * from its passport and agent record (GET /v1/agents/{agent_id}/agent-card). Only AgentCard
 * fields of the A2A schema are used; svc-specific facts travel as a capability extension
 * (`svc:passport`). An agent's card is minimal unless it is listed and has a bio.
 */
import { SVC_VERSION } from '../../version';
import type { RouteTable } from './route-table';
import { TOOL_SPECS, toolName, toolServed } from './tool-map';

export const A2A_PROTOCOL_VERSION = '1.0';

const BEARER_SCHEME = {
  svc_bearer: {
    httpAuthSecurityScheme: {
      scheme: 'Bearer',
      bearerFormat: 'svc_ API key or svc_session_ token',
      description: 'Authorization: Bearer <key>. Get a key from POST /v1/register.',
    },
  },
};
const BEARER_REQUIRED = [{ schemes: { svc_bearer: { list: [] as string[] } } }];

export function svcAgentCard(baseUrl: string, table: RouteTable) {
  return {
    name: 'svc',
    description: 'Identity, memory, web search, documents, browsing, trust and billing for software agents. '
      + 'REST API (HTTP+JSON) and a Model Context Protocol endpoint; every tool is also a skill below.',
    supportedInterfaces: [
      { url: `${baseUrl}/mcp`, protocolBinding: 'MCP', protocolVersion: A2A_PROTOCOL_VERSION },
      { url: `${baseUrl}/v1`, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    provider: { organization: 'svc operator', url: baseUrl },
    version: SVC_VERSION,
    documentationUrl: `${baseUrl}/docs`,
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [{
        uri: 'svc:discovery',
        description: 'Machine-readable capabilities, guide, OpenAPI and MCP tool manifest',
        required: false,
        params: {
          capabilities_url: `${baseUrl}/v1/capabilities`, guide_url: `${baseUrl}/v1/guide`, openapi_url: `${baseUrl}/openapi.json`,
          mcp_manifest_url: `${baseUrl}/v1/mcp/manifest`,
        },
      }],
    },
    securitySchemes: BEARER_SCHEME,
    securityRequirements: BEARER_REQUIRED,
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: TOOL_SPECS.filter((t) => toolServed(t, table)).map((t) => ({
      id: toolName(t.id),
      name: t.id,
      description: t.description,
      tags: ['svc', ...t.id.split('-')],
    })),
  };
}

export interface PassportView {
  did: string;
  agent_id: string;
  agent_name: string;
  bio: string | null;
  skills: string[];
  listed: boolean;
  trust_levels: string[];
  capabilities: { verified: string[] };
  reputation: { score: number; status: string };
  created_at: string;
}

/** Card of one agent; `agentCardUrl` is the agent's own external card, if it registered one. */
export function agentCardOf(p: PassportView, baseUrl: string, agentCardUrl: string | null) {
  const full = p.listed && p.bio !== null && p.bio !== '';
  const passportUrl = `${baseUrl}/v1/agents/${p.agent_id}/passport`;
  return {
    name: p.agent_name,
    description: full && p.bio ? p.bio : `Agent ${p.agent_name} registered on svc (${p.did}).`,
    supportedInterfaces: [{ url: passportUrl, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_PROTOCOL_VERSION }],
    version: '1',
    capabilities: {
      extensions: [{
        uri: 'svc:passport',
        description: 'svc passport of this agent: identity, platform-derived trust and reputation',
        required: false,
        params: {
          did: p.did,
          passport_url: passportUrl,
          ...(agentCardUrl ? { external_agent_card_url: agentCardUrl } : {}),
          ...(full ? {
            trust_levels: p.trust_levels,
            verified_capabilities: p.capabilities.verified,
            reputation_score: p.reputation.score,
            reputation_status: p.reputation.status,
            registered_at: p.created_at,
          } : {}),
        },
      }],
    },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: full && p.skills.length
      ? p.skills.map((s) => ({ id: s, name: s, description: `Self-declared skill: ${s}`, tags: [s] }))
      : [{ id: 'svc-agent', name: 'svc agent', description: 'An agent with an svc passport; it has not published a description.', tags: ['svc'] }],
  };
}

export function aiAgentDocument(baseUrl: string) {
  return {
    schema_version: 'svc.ai-agent.v1' as const,
    name: 'svc',
    version: SVC_VERSION,
    description: 'Self-hostable identity, memory, search, documents, browsing, trust and billing for software agents.',
    base_url: baseUrl,
    register_url: `${baseUrl}/v1/register`,
    capabilities_url: `${baseUrl}/v1/capabilities`,
    guide_url: `${baseUrl}/v1/guide`,
    agent_template_url: `${baseUrl}/v1/agent-template`,
    openapi_url: `${baseUrl}/openapi.json`,
    docs_url: `${baseUrl}/docs`,
    agent_card_url: `${baseUrl}/.well-known/agent-card.json`,
    community_url: `${baseUrl}/v1/community`,
    health_url: `${baseUrl}/health`,
    authentication: { type: 'bearer', header: 'Authorization', obtain: `POST ${baseUrl}/v1/register` },
    mcp: { endpoint: `${baseUrl}/mcp`, transport: 'streamable-http', manifest_url: `${baseUrl}/v1/mcp/manifest` },
  };
}
