/**
 * Tool definition files and their manifest. The manifest hashes the exact bytes served; both
 * carry a strong ETag (SHA-256) and answer 304 to a matching If-None-Match. Legacy /mcp/<file>
 * paths serve the same bytes plus X-Svc-Deprecation.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError } from '../../http/errors';
import { NotModifiedSchema, ToolFileSchema, ToolManifestSchema } from './schemas';
import { sha256Hex, type ToolCatalog } from './tool-defs';

const CACHE = 'public, max-age=3600';
export const DEPRECATION_NOTICE = 'Legacy path: use /mcp/v1/<file>; this alias will be removed after a deprecation period';

/** RFC 9110 If-None-Match: a list of entity tags or "*", weak comparison. */
export function etagMatches(header: string | string[] | undefined, etag: string): boolean {
  if (!header) return false;
  const text = Array.isArray(header) ? header.join(',') : header;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  return text.split(',').some((t) => t.trim() === '*' || bare(t) === bare(etag));
}

function sendCached(request: FastifyRequest, reply: FastifyReply, bytes: Buffer, etag: string) {
  reply.header('cache-control', CACHE).header('etag', etag);
  if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send();
  return reply.type('application/json; charset=utf-8').send(bytes);
}

const FileParams = Type.Object({ file: Type.String({ pattern: '^svc-[a-z-]+\\.json$', description: 'svc-<tool>.json' }) });

export const toolRoutes = (catalog: ToolCatalog): FastifyPluginAsyncTypebox => async (app) => {
  const serveFile = (legacy: boolean) => async (request: FastifyRequest<{ Params: { file: string } }>, reply: FastifyReply) => {
    const bytes = catalog.bytesOf(request.params.file);
    if (!bytes) throw new ApiError(404, 'TOOL_NOT_FOUND', `No tool definition ${request.params.file}; see /v1/mcp/manifest`);
    if (legacy) reply.header('x-svc-deprecation', DEPRECATION_NOTICE).header('link', `</mcp/v1/${request.params.file}>; rel="successor-version"`);
    return sendCached(request, reply, bytes, `"${sha256Hex(bytes)}"`);
  };
  const validationCodes = { 'params.file': { status: 404, code: 'TOOL_NOT_FOUND', message: 'No such tool definition; see /v1/mcp/manifest' } };

  app.get('/v1/mcp/manifest', {
    schema: { summary: 'Tool definition file → SHA-256 of its exact bytes (ETag, 304, cached 3600 s)', tags: ['mcp'], response: { 200: ToolManifestSchema, 304: NotModifiedSchema } },
    config: { auth: 'none', success: [200, 304] },
  }, async (request, reply) => {
    const m = catalog.manifest();
    return sendCached(request, reply, m.body, m.etag);
  });

  app.get('/mcp/v1/:file', {
    schema: { summary: 'MCP tool definition file (svc-<tool>.json)', tags: ['mcp'], params: FileParams, response: { 200: ToolFileSchema, 304: NotModifiedSchema } },
    config: { auth: 'none', validationCodes, success: [200, 304] },
  }, serveFile(false));

  app.get('/mcp/:file', {
    schema: { summary: 'Deprecated alias of /mcp/v1/<file> (adds X-Svc-Deprecation)', tags: ['mcp'], params: FileParams, deprecated: true, response: { 200: ToolFileSchema, 304: NotModifiedSchema } },
    config: { auth: 'none', validationCodes, success: [200, 304] },
  }, serveFile(true));
};
