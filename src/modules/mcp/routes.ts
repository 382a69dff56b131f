/**
 * POST /mcp: the live MCP endpoint (Streamable HTTP, stateless: a fresh server and transport
 * per request, so any instance can answer any request). The route is `auth: 'key'`, so the
 * shared auth hook refuses a missing or invalid Bearer with 401 INVALID_API_KEY before MCP
 * runs; tool calls then reuse that same Authorization header. GET and DELETE /mcp (server-sent
 * stream, session end) have no meaning without sessions and answer 405.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ToolCatalog } from '../discovery/tool-defs';
import { AcceptedSchema, JsonRpcErrorSchema, McpAnswerSchema } from '../discovery/schemas';
import { ApiError, handleError, isJsonParseError } from '../../http/errors';
import { errorResponses } from '../../http/response-schemas';

/**
 * The MCP SDK (with zod and its HTTP server pieces) loaded on the first /mcp request: it is a large
 * module graph (~25 MiB resident, part of start-up time) that a host whose agents call the REST API
 * never needs.
 */
interface McpLibrary {
  createMcpServer: typeof import('./server').createMcpServer;
  StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
}
let library: Promise<McpLibrary> | undefined;
const mcpLibrary = (): Promise<McpLibrary> => (library ??= Promise.all([import('./server'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')])
  .then(([server, http]) => ({ createMcpServer: server.createMcpServer, StreamableHTTPServerTransport: http.StreamableHTTPServerTransport })));

/**
 * The MCP transport's rule against DNS rebinding: a browser page may reach /mcp only from an origin
 * the operator allows (svc's own and SVC_MCP_ALLOWED_ORIGINS). Clients that are not browsers send no
 * Origin header and are not affected. An allowed page also gets what a browser needs to make the
 * call at all (CORS): an answer to its preflight, and Access-Control-Allow-Origin on every answer,
 * refusals included, so it can read them.
 */
function origins(allowed: string[]) {
  const originOf = (text: string): string => {
    try {
      return new URL(text).origin;
    } catch {
      return text; // "null", or no URL at all: matches nothing allowed
    }
  };
  const set = new Set(allowed.map(originOf));
  /** The request's Origin when a browser page of an allowed origin sent it; undefined otherwise. */
  const allowedOrigin = (request: FastifyRequest): string | undefined => {
    const origin = request.headers.origin;
    return typeof origin === 'string' && set.has(originOf(origin)) ? origin : undefined;
  };
  const guard = async (request: FastifyRequest) => {
    const origin = request.headers.origin;
    if (origin !== undefined && allowedOrigin(request) === undefined) {
      throw new ApiError(403, 'ORIGIN_NOT_ALLOWED', `Origin ${origin} may not call /mcp (allowed: svc's own origin and SVC_MCP_ALLOWED_ORIGINS)`);
    }
  };
  return { allowedOrigin, guard };
}

/** Response headers of an answer to an allowed page (Vary: the answer depends on Origin). */
const corsHeaders = (origin: string): Record<string, string> => ({
  'access-control-allow-origin': origin,
  'access-control-expose-headers': 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate',
  vary: 'Origin',
});

export const mcpRoutes = (deps: { root: FastifyInstance; catalog: ToolCatalog; allowedOrigins: string[] }): FastifyPluginAsyncTypebox => async (app) => {
  const { allowedOrigin, guard } = origins(deps.allowedOrigins);
  app.addHook('onRequest', guard);
  // Every answer of these routes (401 from the auth hook included), except POST's, which writes its own.
  app.addHook('onSend', async (request, reply) => {
    const origin = allowedOrigin(request);
    if (origin) reply.headers(corsHeaders(origin));
  });
  app.post('/mcp', {
    schema: {
      summary: 'Model Context Protocol endpoint (Streamable HTTP, JSON-RPC): the svc_* tools',
      tags: ['mcp'],
      // The protocol's own answers: JSON-RPC bodies (a parse error, an invalid request, an Accept
      // header without application/json and text/event-stream); refusals before MCP runs are ApiError.
      response: {
        200: McpAnswerSchema,
        202: AcceptedSchema,
        400: { ...JsonRpcErrorSchema, description: 'JSON-RPC parse error (-32700) or invalid request (-32600, -32000)' },
        406: { ...JsonRpcErrorSchema, description: 'JSON-RPC error -32000: the Accept header must name application/json and text/event-stream' },
      },
    },
    config: { auth: 'key', scope: 'any', success: [200, 202], errors: { 403: ['ORIGIN_NOT_ALLOWED'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE'] } },
    // A body that is not JSON is a JSON-RPC parse error (-32700, id null), as the protocol answers
    // it; every other refusal (401 ...) keeps the API's format.
    // Sends the answer and returns nothing, as a route's error handler is typed.
    errorHandler: (err, request, reply) => {
      if (isJsonParseError(err)) void reply.code(400).send({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the request body is not valid JSON' }, id: null });
      else void handleError(err, request, reply);
    },
  }, async (request, reply) => {
    const { createMcpServer, StreamableHTTPServerTransport } = await mcpLibrary();
    const server = createMcpServer(deps.root, deps.catalog, request.headers.authorization, request.auth?.tools);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const origin = allowedOrigin(request);
    if (origin) for (const [k, v] of Object.entries(corsHeaders(origin))) reply.raw.setHeader(k, v);
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });

  // The CORS preflight of an allowed page (a POST with Authorization and a JSON body always has one).
  // Plumbing of the browser, not an operation: hidden from the OpenAPI document and the route table.
  app.route({
    method: 'OPTIONS', url: '/mcp',
    schema: { hide: true },
    config: { auth: 'none' },
    handler: async (request, reply) => {
      reply.code(204).header('allow', 'POST, OPTIONS');
      if (allowedOrigin(request)) {
        reply.headers({
          'access-control-allow-methods': 'POST',
          'access-control-allow-headers': 'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID',
          'access-control-max-age': '600',
        });
      }
      return reply.send();
    },
  });

  const notAllowed = { error_code: 'METHOD_NOT_ALLOWED', message: 'This MCP endpoint is stateless: use POST /mcp' };
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method, url: '/mcp',
      schema: { summary: `${method} /mcp: not used by the stateless MCP endpoint (405)`, tags: ['mcp'], response: errorResponses(405) },
      config: { auth: 'key', scope: 'any', success: [], errors: { 405: ['METHOD_NOT_ALLOWED'] } },
      handler: async (_request, reply) => reply.code(405).header('allow', 'POST').send(notAllowed),
    });
  }
};
