/**
 * /v1/blobs routes. The upload lives in its own encapsulated plugin: there, and only there, the
 * JSON parser is replaced by @fastify/multipart (field `file`) and a catch-all parser that hands
 * the raw request stream through unread, so any Content-Type is stored as bytes and nothing is
 * buffered. Downloads stream from the store with Range support (range.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import multipart from '@fastify/multipart';
import type { Readable } from 'node:stream';
import { agentOf } from '../../http/auth';
import { ApiError } from '../../http/errors';
import { unstorableText } from '../../http/input-guard';
import type { Clock } from '../../lib/clock';
import { errorResponses } from '../../http/response-schemas';
import {
  BlobIdCodes, BlobListResponse, BlobMetaResponse, BlobParams, DownloadQuery, downloadResponses, ListQuery, NoContent, SignedUrlResponse, signedUrlQuery, UploadResponse,
} from './schemas';
import type { BlobService, Download } from './service';
import type { UrlSigner } from './signed-url';

/** The longest multipart file name kept (characters). */
const MAX_FILENAME_CHARS = 255;

export interface BlobRouteDeps {
  blobs: BlobService;
  signer: UrlSigner;
  clock: Clock;
  maxBytes: number;
  signedUrlMaxSeconds: number;
}

const caller = (r: Parameters<typeof agentOf>[0]) => {
  const a = agentOf(r);
  return { agentId: a.agentId, tier: a.tier };
};

function send(reply: FastifyReply, d: Download) {
  if (d.error) throw new ApiError(d.error.status, d.error.code, d.error.message, d.error.extra, d.headers);
  reply.code(d.status).headers(d.headers);
  // No payload for 304 and HEAD: Fastify then adds neither a Content-Type nor a Content-Length of
  // its own (a 304's Content-Length must be the 200's or absent, RFC 9110 §8.6).
  return d.body ? reply.send(d.body) : reply.send();
}

/** The download headers the service reads; HEAD answers like GET without opening the bytes. */
const downloadHeaders = (request: FastifyRequest) => ({
  range: request.headers.range,
  ifNoneMatch: request.headers['if-none-match'],
  // Twice sent, it is no single validator: joined, it matches nothing and the whole blob is sent.
  ifRange: request.headers['if-range'] === undefined ? undefined : [request.headers['if-range']].flat().join(', '),
  head: request.method === 'HEAD',
});

const uploadRoutes = (deps: BlobRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  app.removeAllContentTypeParsers();
  await app.register(multipart, { limits: { files: 1, fileSize: deps.maxBytes + 1, fields: 10, fieldSize: 1024, parts: 20 } });
  // Everything else is the blob itself: pass the stream on unread.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.put('/v1/blobs', {
    schema: {
      summary: 'Upload a blob: multipart field `file`, or the raw body with its Content-Type. 201 new, 200 same bytes again',
      tags: ['blobs'],
      consumes: ['multipart/form-data', 'application/octet-stream', '*/*'],
      response: { 201: UploadResponse, 200: UploadResponse, ...errorResponses(400, 413, 422, 503) },
    } as Record<string, unknown>,
    config: { auth: 'key', scope: 'svc:blob-store', success: [201, 200], errors: { 400: ['BLOB_MULTIPART_INVALID'], 413: ['BLOB_TOO_LARGE', 'BLOB_STORAGE_LIMIT'], 422: ['BLOB_FILE_REQUIRED', 'BLOB_CONTENT_TYPE_INVALID'], 503: ['BLOB_STORE_UNAVAILABLE'] } },
  }, async (request, reply) => {
    const who = caller(request);
    const declared = Number(request.headers['content-length']);
    const declaredBytes = Number.isFinite(declared) && declared >= 0 ? declared : undefined;
    // A refused upload leaves body bytes unread: close the connection rather than read them.
    const refuse = (e: unknown) => {
      if (e instanceof ApiError && e.status === 413) reply.header('connection', 'close');
      throw e;
    };
    let input;
    // A multipart body that ends inside the file part (no closing boundary) fails the file stream
    // mid-upload: the client's malformed envelope, not a server error. stage() keeps nothing.
    let broken: Error | undefined;
    if (request.isMultipart()) {
      let part;
      try {
        part = await request.file();
      } catch (e) {
        throw new ApiError(400, 'BLOB_MULTIPART_INVALID', `Malformed multipart body: ${(e as Error).message}`);
      }
      if (!part || part.fieldname !== 'file') {
        part?.file.resume();
        throw new ApiError(422, 'BLOB_FILE_REQUIRED', 'The multipart body must carry the blob in a file field named `file`', { field: 'body.file' });
      }
      // A name is kept to show and to send back in Content-Disposition: 255 characters, as file systems
      // allow. (A part header over busboy's 80 KiB is cut short, its Content-Type lost: such a name is
      // refused here too, before the bytes could be stored under the wrong type.)
      const badName = part.filename
        ? unstorableText(part.filename) ?? ([...part.filename].length > MAX_FILENAME_CHARS ? `longer than ${MAX_FILENAME_CHARS} characters` : undefined)
        : undefined;
      if (badName) {
        part.file.resume();
        throw new ApiError(422, 'VALIDATION_FAILED', `The file name cannot be stored: ${badName}`, { field: 'body.file' });
      }
      part.file.once('error', (e: Error) => (broken = e));
      // The multipart envelope is larger than the file: only refuse early on a file-size basis (in stage()).
      input = { body: part.file as Readable, contentType: part.mimetype, filename: part.filename || null };
    } else {
      const body = (request.body as Readable | undefined) ?? request.raw;
      input = { body, contentType: request.headers['content-type'], declaredBytes };
    }
    const r = await deps.blobs.upload(who, input).catch((e) => {
      if (!(e instanceof ApiError) && broken) throw new ApiError(400, 'BLOB_MULTIPART_INVALID', `Malformed multipart body: ${broken.message}`);
      return refuse(e);
    });
    return reply.code(r.created ? 201 : 200).send({ status: 'success', ...r.blob });
  });
};

export const blobRoutes = (deps: BlobRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { blobs } = deps;
  await app.register(uploadRoutes(deps));

  app.get('/v1/blobs', {
    schema: { querystring: ListQuery, summary: 'List your blobs, newest first', tags: ['blobs'], response: { 200: BlobListResponse } },
    config: { auth: 'key', scope: 'svc:blob-store' },
  }, async (request) => blobs.list(caller(request).agentId, request.query.page ?? 1, request.query.per_page ?? 50));

  // GET and HEAD (RFC 9110 §9.1); HEAD is declared here rather than Fastify's twin, which would read the whole blob and discard it.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/v1/blobs/:blob_id',
    exposeHeadRoute: false,
    schema: {
      params: BlobParams, summary: 'Download a blob (HTTP Range: one range → 206, several → multipart/byteranges)', tags: ['blobs'],
      response: downloadResponses(404, 416, 503),
    },
    config: { auth: 'key', scope: 'svc:blob-store', errors: { 404: ['BLOB_NOT_FOUND'], 416: ['RANGE_NOT_SATISFIABLE'], 503: ['BLOB_STORE_UNAVAILABLE'] }, validationCodes: BlobIdCodes },
    handler: async (request, reply) => send(reply, await blobs.download(caller(request).agentId, request.params.blob_id, downloadHeaders(request))),
  });

  app.get('/v1/blobs/:blob_id/meta', {
    schema: { params: BlobParams, summary: 'Metadata of a blob: size, type, sha256, dates, latest parse', tags: ['blobs'], response: { 200: BlobMetaResponse, ...errorResponses(404) } },
    config: { auth: 'key', scope: 'svc:blob-store', errors: { 404: ['BLOB_NOT_FOUND'] }, validationCodes: BlobIdCodes },
  }, async (request) => blobs.meta(caller(request).agentId, request.params.blob_id));

  app.get('/v1/blobs/:blob_id/signed-url', {
    schema: {
      params: BlobParams, querystring: signedUrlQuery(deps.signedUrlMaxSeconds), tags: ['blobs'],
      summary: 'A signed URL that reads the blob without a key until it expires',
      response: { 200: SignedUrlResponse, ...errorResponses(404) },
    },
    config: { auth: 'key', scope: 'svc:blob-store', validationCodes: BlobIdCodes },
  }, async (request) => blobs.signedUrl(caller(request).agentId, request.params.blob_id, request.query.expires_in));

  // Reached through a signed URL (no key), or by the owner with the key. Hence 'optional'.
  app.route({
    method: ['GET', 'HEAD'],
    url: '/v1/blobs/:blob_id/download',
    exposeHeadRoute: false,
    schema: {
      params: BlobParams, querystring: DownloadQuery, tags: ['blobs'],
      summary: 'Download through a signed URL (agent_id, expires, signature from .../signed-url), or with the key',
      response: downloadResponses(403, 404, 416, 503),
    },
    config: { auth: 'optional', scope: 'svc:blob-store', errors: { 403: ['SIGNED_URL_INVALID', 'SIGNED_URL_EXPIRED'], 404: ['BLOB_NOT_FOUND'], 503: ['BLOB_STORE_UNAVAILABLE'] }, validationCodes: BlobIdCodes },
    handler: async (request, reply) => {
      const { agent_id, expires, signature } = request.query;
      const { blob_id } = request.params;
      const h = downloadHeaders(request);
      if (signature === undefined && request.auth) return send(reply, await blobs.download(request.auth.agentId, blob_id, h));
      if (!agent_id || expires === undefined || !signature) {
        throw new ApiError(403, 'SIGNED_URL_INVALID', 'This URL needs agent_id, expires and signature from GET /v1/blobs/{blob_id}/signed-url');
      }
      const check = deps.signer.check(agent_id, blob_id, expires, signature, deps.clock.now());
      if (check === 'invalid') throw new ApiError(403, 'SIGNED_URL_INVALID', 'The URL signature does not match');
      if (check === 'expired') throw new ApiError(403, 'SIGNED_URL_EXPIRED', 'The signed URL has expired; ask for a new one');
      return send(reply, await blobs.download(agent_id, blob_id, h));
    },
  });

  app.delete('/v1/blobs/:blob_id', {
    schema: {
      params: BlobParams, summary: 'Soft-delete a blob: 204, also for unknown ids (existence is not leaked)', tags: ['blobs'],
      response: { 204: NoContent('Deleted, or nothing to delete'), ...errorResponses(404) },
    },
    config: { auth: 'key', scope: 'svc:blob-store', success: [204], errors: { 404: ['BLOB_NOT_FOUND'] }, validationCodes: BlobIdCodes },
  }, async (request, reply) => {
    await blobs.remove(caller(request).agentId, request.params.blob_id);
    return reply.code(204).send();
  });
};
