/**
 * POST /mcp: the live MCP endpoint (Streamable HTTP, stateless: a fresh server and transport
 * per request, so any instance can answer any request). The route is `auth: 'key'`, so the
 * shared auth hook refuses a missing or invalid Bearer with 401 INVALID_API_KEY before MCP
 * runs; tool calls then reuse that same Authorization header. GET and DELETE /mcp (server-sent
 * stream, session end) have no meaning without sessions and answer 405.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { ToolCatalog } from '../discovery/tool-defs';
import { ApiError, handleError, isJsonParseError } from '../../http/errors';
import { createMcpServer } from './server';

/**
 * The MCP transport's rule against DNS rebinding: a browser page may reach /mcp only from an origin
 * the operator allows (svc's own and SVC_MCP_ALLOWED_ORIGINS). Clients that are not browsers send no
 * Origin header and are not affected.
 */
function originGuard(allowed: string[]) {
  const originOf = (text: string): string => {
    try {
      return new URL(text).origin;
    } catch {
      return text; // "null", or no URL at all: matches nothing allowed
    }
  };
  const origins = new Set(allowed.map(originOf));
  return async (request: FastifyRequest) => {
    const origin = request.headers.origin;
    if (origin !== undefined && !origins.has(originOf(origin))) {
      throw new ApiError(403, 'ORIGIN_NOT_ALLOWED', `Origin ${origin} may not call /mcp (allowed: svc's own origin and SVC_MCP_ALLOWED_ORIGINS)`);
    }
  };
}

export const mcpRoutes = (deps: { root: FastifyInstance; catalog: ToolCatalog; allowedOrigins: string[] }): FastifyPluginAsyncTypebox => async (app) => {
  app.addHook('onRequest', originGuard(deps.allowedOrigins));
  app.post('/mcp', {
    schema: { summary: 'Model Context Protocol endpoint (Streamable HTTP, JSON-RPC): the svc_* tools', tags: ['mcp'] },
    config: { auth: 'key', errors: { 403: ['ORIGIN_NOT_ALLOWED'] } },
    // A body that is not JSON is a JSON-RPC parse error (-32700, id null), as the protocol answers
    // it; every other refusal (401 ...) keeps the API's format.
    errorHandler: (err, request, reply) => isJsonParseError(err)
      ? reply.code(400).send({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the request body is not valid JSON' }, id: null })
      : handleError(err, request, reply),
  }, async (request, reply) => {
    const server = createMcpServer(deps.root, deps.catalog, request.headers.authorization);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });

  const notAllowed = { error_code: 'METHOD_NOT_ALLOWED', message: 'This MCP endpoint is stateless: use POST /mcp' };
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method, url: '/mcp',
      schema: { summary: `${method} /mcp: not used by the stateless MCP endpoint (405)`, tags: ['mcp'] },
      config: { auth: 'key', success: [], errors: { 405: ['METHOD_NOT_ALLOWED'] } },
      handler: async (_request, reply) => reply.code(405).header('allow', 'POST').send(notAllowed),
    });
  }
};
