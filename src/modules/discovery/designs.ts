/**
 * How svc behaves where its API contract leaves a detail open (a body or format it does not fix),
 * published in the OpenAPI document (`x-svc-designs`; `spec_item` names the open detail) and on a
 * page of its own (GET /docs/designs, linked from the reference at /docs). Each entry points at where
 * the design lives, so the list is an index, not a second definition: shapes are in the route schemas
 * and responses.
 */

/** The API reference page and the designs page. */
export const DOCS_PATH = '/docs';
export const DESIGNS_PATH = '/docs/designs';
export interface Design {
  spec_item: string;
  design: string;
  see: string;
}

export const NOT_SHOWN_DESIGNS: Design[] = [
  { spec_item: 'Error envelope fields other than error_code', design: 'message always; field on validation failures; upgrade_url on limit errors; register_url on 401; request_id on 500', see: '#/components/schemas/ApiError' },
  { spec_item: 'Per-route error codes', design: 'each operation lists its possible codes per status in x-svc-error-codes', see: 'responses of each operation' },
  { spec_item: 'Content of /.well-known/ai-agent.json', design: 'an index of discovery URLs: register, capabilities, guide, agent template, OpenAPI, docs, agent card, community, health, MCP endpoint and manifest', see: 'GET /.well-known/ai-agent.json' },
  { spec_item: 'Content of /.well-known/agent-card.json', design: 'an A2A v1.0 AgentCard: supportedInterfaces (MCP at /mcp, HTTP+JSON at /v1), Bearer securitySchemes, one skill per MCP tool', see: 'GET /.well-known/agent-card.json' },
  { spec_item: 'Agent card of an agent', design: 'an A2A v1.0 AgentCard; minimal (name, did, passport URL) unless listed with a bio, then also its skills, trust levels, verified capabilities and reputation, in the svc:passport extension', see: 'GET /v1/agents/{agent_id}/agent-card' },
  { spec_item: 'The four founding-period statistics', design: 'agents_registered, agents_registered_last_7d, directory_listed (from the database) and founding_period_ends_at (SVC_FOUNDING_PERIOD_END)', see: 'GET /v1/community' },
  { spec_item: 'Tool definition file format', design: 'JSON: schema_version svc.tool.v1, id, name (svc_<tool>), description, inputSchema (derived from the route schemas; multi-route tools take an action argument), actions (method, path, auth, required inputs), authentication, mcp_endpoint', see: 'GET /mcp/v1/svc-memory.json' },
  { spec_item: 'Manifest format', design: '{version, algorithm: sha256, tools: {<file id>: <hex SHA-256 of the served bytes>}, urls}; strong ETag = SHA-256 of the manifest bytes', see: 'GET /v1/mcp/manifest' },
  { spec_item: 'Deprecation period of legacy /mcp/ paths', design: 'X-Svc-Deprecation names the successor; Link rel=successor-version points at it', see: 'GET /mcp/{file}' },
];
