/**
 * Response schemas of the discovery routes (routes.ts, tool-routes.ts) and of the MCP endpoint
 * (src/modules/mcp/routes.ts). Objects are closed; open by design: an example request body of the
 * guide (any JSON the route takes), a tool's input schema (a JSON Schema document) and a JSON-RPC
 * result (the tool output of an MCP answer).
 */
import { Type } from 'typebox';
import { CommunityStatsSchema, Nullable } from '../../http/response-schemas';
import { EndpointRefSchema } from './capabilities-schema';

export { CapabilitiesSchema } from './capabilities-schema';

const S = Type.String();
const B = Type.Boolean();
const Strings = Type.Array(S);
const Success = Type.Literal('success');
const OpenJson = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const CommunitySchema = Type.Object({ status: Success, ...CommunityStatsSchema.properties }, { title: 'Community' });

export const TermsSchema = Type.Object({
  status: Success,
  terms_version: S,
  terms_url: S,
  terms: Type.Array(S, { description: 'The terms, one paragraph each' }),
}, { title: 'Terms' });

/** GET /terms when the operator's terms live elsewhere (SVC_TERMS_URL): a redirect, no body. */
export const RedirectSchema = Type.Null({ description: 'Redirect (Location: the operator\'s terms)' });

/** 304 of a cached discovery file: no body. */
export const NotModifiedSchema = Type.Null({ description: 'Not modified: If-None-Match matched the ETag' });

const GuideStep = Type.Object({
  n: Type.Integer(),
  group: S,
  step: S,
  why: S,
  request: Type.Object({
    method: S,
    url: S,
    headers: Type.Optional(Type.Record(Type.String(), S)),
    body: Type.Optional(Type.Unknown({ description: 'The JSON body to send (an example)' })),
    raw_body: Type.Optional(Type.String({ description: 'What the body is when it is not JSON (bytes)' })),
  }),
  route: Nullable(Type.String({ description: 'METHOD /path of the route the request hits; null when this instance does not serve it' })),
  auth: S,
  summary: Nullable(S),
  served: B,
  available: Type.Optional(Type.Literal(false, { description: 'Present when the route is served but does not work on this host' })),
  unavailable_reason: Type.Optional(Nullable(S)),
});

export const GuideSchema = Type.Object({
  status: Success,
  version: S,
  base_url: S,
  steps: Type.Array(GuideStep),
}, { title: 'Guide' });

export const AgentTemplateSchema = Type.Object({
  status: Success,
  version: S,
  instructions: S,
  template: Type.Object({
    svc: Type.Object({ base_url: S, api_key_env: S, api_key: S, agent_id: S, did: S, referral_code: S }),
    registration: Type.Object({
      agent_name: S,
      owner_identifier: S,
      agree_to_terms: B,
      passport_public_key: S,
      recovery_public_key: Type.Null(),
      referral_agent: Type.Null(),
      registration_source: Type.Null(),
    }),
    passport: Type.Object({ private_key_path: S, key_algorithm: S }),
    memory: Type.Object({ key_prefix: S, default_importance: S, reload_context_on_start: B, context_limit: Type.Integer() }),
    search: Type.Object({
      num_results: Type.Integer(),
      give_feedback: B,
      available_on_this_host: B,
      unavailable_reason: Type.Optional(Nullable(S)),
    }),
    mcp: Type.Object({
      url: S,
      transport: S,
      headers: Type.Object({ Authorization: S }),
      manifest_url: S,
      tools: Strings,
    }),
  }),
}, { title: 'AgentTemplate' });

// ---- A2A v1.0 agent cards (agent-card.ts) ----

const Interface = Type.Object({ url: S, protocolBinding: S, protocolVersion: S });
const Skill = Type.Object({ id: S, name: S, description: S, tags: Strings });
const Extension = <P extends ReturnType<typeof Type.Object>>(params: P) => Type.Object({ uri: S, description: S, required: B, params });

export const SvcAgentCardSchema = Type.Object({
  name: S,
  description: S,
  supportedInterfaces: Type.Array(Interface),
  provider: Type.Object({ organization: S, url: S }),
  version: S,
  documentationUrl: S,
  capabilities: Type.Object({
    streaming: B,
    pushNotifications: B,
    extendedAgentCard: B,
    extensions: Type.Array(Extension(Type.Object({ capabilities_url: S, guide_url: S, openapi_url: S, mcp_manifest_url: S }))),
  }),
  securitySchemes: Type.Object({
    svc_bearer: Type.Object({ httpAuthSecurityScheme: Type.Object({ scheme: S, bearerFormat: S, description: S }) }),
  }),
  securityRequirements: Type.Array(Type.Object({ schemes: Type.Object({ svc_bearer: Type.Object({ list: Strings }) }) })),
  defaultInputModes: Strings,
  defaultOutputModes: Strings,
  skills: Type.Array(Skill),
}, { title: 'SvcAgentCard' });

export const AgentCardSchema = Type.Object({
  name: S,
  description: S,
  supportedInterfaces: Type.Array(Interface),
  version: S,
  capabilities: Type.Object({
    extensions: Type.Array(Extension(Type.Object({
      did: S,
      passport_url: S,
      external_agent_card_url: Type.Optional(S),
      // A listed agent with a bio: its passport facts.
      trust_levels: Type.Optional(Strings),
      verified_capabilities: Type.Optional(Strings),
      reputation_score: Type.Optional(Type.Number()),
      reputation_status: Type.Optional(S),
      registered_at: Type.Optional(S),
    }))),
  }),
  defaultInputModes: Strings,
  defaultOutputModes: Strings,
  skills: Type.Array(Skill),
}, { title: 'AgentCard' });

export const AiAgentDocumentSchema = Type.Object({
  schema_version: Type.Literal('svc.ai-agent.v1'),
  name: S,
  version: S,
  description: S,
  base_url: S,
  register_url: S,
  capabilities_url: S,
  guide_url: S,
  agent_template_url: S,
  openapi_url: S,
  docs_url: S,
  agent_card_url: S,
  community_url: S,
  health_url: S,
  authentication: Type.Object({ type: S, header: S, obtain: S }),
  mcp: Type.Object({ endpoint: S, transport: S, manifest_url: S }),
}, { title: 'AiAgentDocument' });

// ---- MCP tool definition files and their manifest (tool-defs.ts) ----

export const ToolManifestSchema = Type.Object({
  version: S,
  algorithm: Type.Literal('sha256'),
  tools: Type.Record(Type.String(), Type.String({ pattern: '^[0-9a-f]{64}$' }), { description: 'Tool file id → hex SHA-256 of its served bytes' }),
  urls: Type.Record(Type.String(), S, { description: 'Tool file id → its URL' }),
}, { title: 'ToolManifest' });

export const ToolFileSchema = Type.Object({
  schema_version: Type.Literal('svc.tool.v1'),
  id: S,
  name: S,
  description: S,
  inputSchema: OpenJson('The tool\'s arguments: a JSON Schema document'),
  actions: Type.Array(Type.Object({
    action: S,
    method: S,
    path: S,
    url: S,
    auth: S,
    scope: Type.Optional(Nullable(Type.String(), { description: 'What a scoped key needs: a capability URI, any, or null (refused); absent for public actions' })),
    summary: S,
    required: Strings,
    served: B,
  })),
  authentication: Type.Object({ type: S, scheme: S, header: S, format: S }),
  mcp_endpoint: S,
  svc_version: S,
}, { title: 'ToolFile' });

// ---- JSON-RPC 2.0 answers of POST /mcp ----

const JsonRpcId = Type.Union([Type.String(), Type.Number(), Type.Null()]);
const JsonRpcErrorObject = Type.Object({ code: Type.Integer(), message: S, data: Type.Optional(Type.Unknown()) });

/** A JSON-RPC error answer (parse error, invalid request, not acceptable): the protocol's body, not ApiError. */
export const JsonRpcErrorSchema = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  id: JsonRpcId,
  error: JsonRpcErrorObject,
}, { title: 'JsonRpcError' });

/** One JSON-RPC response: a result (open by design: what the method returns, a tool's output) or an error. */
export const JsonRpcResponseSchema = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  id: JsonRpcId,
  result: Type.Optional(OpenJson('The method\'s result (tools/list: the tools; tools/call: content and isError)')),
  error: Type.Optional(JsonRpcErrorObject),
}, { title: 'JsonRpcResponse' });

export const McpAnswerSchema = Type.Union([JsonRpcResponseSchema, Type.Array(JsonRpcResponseSchema)], {
  description: 'The JSON-RPC response, or an array of them for a batch',
});

/** 202 of a POST that carried only notifications or responses: no body. */
export const AcceptedSchema = Type.Null({ description: 'Accepted: the message held no request' });

export { EndpointRefSchema };
