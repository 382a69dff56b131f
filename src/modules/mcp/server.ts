/**
 * The MCP server of one request (stateless Streamable HTTP): lists the tools this instance
 * serves, with the same names and input schemas as the tool definition files, and runs each
 * call through the HTTP route it maps to (dispatch.ts).
 */
import type { FastifyInstance } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { SVC_VERSION } from '../../version';
import type { ToolCatalog } from '../discovery/tool-defs';
import { scopedKeyNeeds } from '../discovery/schema-facts';
import { callTool } from './dispatch';

/**
 * tools/call as the SDK's Server checks it, but parsed leniently first: the SDK's base class parses a
 * request with the handler's schema before anything else and answers a failure as -32603 (internal
 * error); invalid params (none, arguments that are not an object) are the client's, -32602 (JSON-RPC
 * 2.0, MCP Tools: error handling). With this schema the params pass through as sent and the Server's
 * own check of tools/call answers them -32602.
 */
const LenientCallToolRequest = CallToolRequestSchema.extend({
  params: CallToolRequestSchema.shape.params.catch((ctx) => ctx.value as never),
});

/** `writeSet`: the tools a delegated key may call (its write_set); a call of another tool is refused as the routes refuse it. */
export function createMcpServer(app: FastifyInstance, catalog: ToolCatalog, authorization?: string, writeSet?: string[]): Server {
  const server = new Server({ name: 'svc', version: SVC_VERSION }, { capabilities: { tools: {} } });
  const served = () => catalog.definitions().filter((d) => d.available);

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: served().map((d) => ({
      name: d.name, description: d.description, inputSchema: d.inputSchema as { type: 'object' },
      // Per action, what a scoped key needs: a capability URI, 'any', or null (scoped keys refused); public actions are left out.
      _meta: { 'svc/scopes': Object.fromEntries(d.actions.filter((a) => a.route).map((a) => [a.action, scopedKeyNeeds(a.route!)]).filter(([, v]) => v !== undefined)) },
    })),
  }));

  server.setRequestHandler(LenientCallToolRequest, async (request) => {
    const def = served().find((d) => d.name === request.params.name);
    // An unknown tool is a protocol error (MCP, Tools: error handling), not a failed call.
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name} (tools/list names the tools this instance serves)`);
    // Two tools may share a route (svc_blob and svc_blob_upload): the route lets either through, the tool's name decides here.
    if (writeSet && !writeSet.includes(def.name)) {
      const refusal = { error_code: 'SCOPE_NOT_GRANTED', message: `This delegated key may use only the tools of its write_set (${writeSet.join(', ')}), not ${def.name}`, required_tools: [def.name], key_write_set: writeSet };
      return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(refusal) }] };
    }
    return callTool(app, def, (request.params.arguments ?? {}) as Record<string, unknown>, authorization);
  });
  return server;
}
