import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** The one way to refuse a request: rendered as `{ error_code, message, ...extra }`. */
export class ApiError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    public readonly extra: Record<string, unknown> = {},
    public readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * A route maps a schema failure on one field to the API's error code for it, e.g.
 * `config: { validationCodes: { 'params.key': { status: 422, code: 'MEMORY_KEY_INVALID' } } }`.
 * The key is `<body|querystring|params|headers>.<top-level field>`, or `<context>.*` for any field.
 */
export interface ValidationCode {
  status: number;
  code: string;
  message?: string;
  /** Only for these schema keywords (e.g. ['maxLength'] for a TOO_LONG code); other failures of the field are 422 VALIDATION_FAILED. */
  keywords?: string[];
}

function fieldOf(err: FastifyError): string | undefined {
  const first = err.validation?.[0] as { instancePath?: string; params?: Record<string, unknown> } | undefined;
  if (!first) return undefined;
  const missing = first.params?.missingProperty ?? first.params?.additionalProperty;
  if (typeof missing === 'string') return missing.replace(/^\./, '');
  const seg = (first.instancePath ?? '').split('/').filter(Boolean)[0];
  return seg;
}

function validationFailure(err: FastifyError, request: FastifyRequest): ApiError {
  const detail = err.message.replace(/^(body|querystring|params|headers)\/?/, '').trim();
  return fieldFailure(request, err.validationContext ?? 'body', fieldOf(err), detail, { keyword: err.validation?.[0]?.keyword });
}

/**
 * A refused input field, with the route's own code for it when it maps one (validationCodes),
 * else 422 VALIDATION_FAILED. Used for schema failures and for checks made after validation.
 */
export function fieldFailure(request: FastifyRequest, context: string, field: string | undefined, detail: string, opts: { detailFirst?: boolean; keyword?: string } = {}): ApiError {
  const codes = (request.routeOptions.config as { validationCodes?: Record<string, ValidationCode> } | undefined)?.validationCodes ?? {};
  return codedFailure(codes, context, field, detail, opts);
}

function codedFailure(codes: Record<string, ValidationCode>, context: string, field: string | undefined, detail: string, opts: { detailFirst?: boolean; keyword?: string } = {}): ApiError {
  const candidate = (field && codes[`${context}.${field}`]) || codes[`${context}.*`];
  // A code kept for some schema rules (REGISTRATION_SOURCE_TOO_LONG: maxLength) is not the answer to
  // any other problem of its field, such as a NUL the input guard refuses (no schema keyword at all).
  const mapped = candidate && (!candidate.keywords || (opts.keyword !== undefined && candidate.keywords.includes(opts.keyword))) ? candidate : undefined;
  const where = field ? `${context}.${field}` : context;
  // detailFirst: the route's message describes its schema rule, not this problem.
  if (mapped) return new ApiError(mapped.status, mapped.code, (!opts.detailFirst && mapped.message) || `Invalid ${where}: ${detail}`, { field: where });
  return new ApiError(422, 'VALIDATION_FAILED', `Invalid ${where}: ${detail}`, { field: where });
}

/** Maps Fastify's own 4xx errors (body parsing, size, media type) onto stable codes. */
function frameworkFailure(err: FastifyError): ApiError | undefined {
  const status = err.statusCode ?? 500;
  if (status >= 500) return undefined;
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'PAYLOAD_TOO_LARGE', 'Request body is larger than this route accepts');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', err.message);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'INVALID_JSON', 'Request body is not valid JSON');
    default:
      if (err instanceof SyntaxError || /JSON/.test(err.message)) return new ApiError(400, 'INVALID_JSON', 'Request body is not valid JSON');
      return new ApiError(status, 'BAD_REQUEST', err.message);
  }
}

export function sendApiError(reply: FastifyReply, e: ApiError): FastifyReply {
  for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
  return reply.code(e.status).send({ error_code: e.code, message: e.message, ...e.extra });
}

/**
 * Fastify's errors from before routing (a path value over maxParamLength, malformed percent-encoding
 * in the path), in the API's error format instead of Fastify's own.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void sendApiError(reply, new ApiError(414, 'URI_TOO_LONG', 'A path segment of this URL is longer than 8192 characters'));
  } else if (err.code === 'FST_ERR_BAD_URL') {
    void sendApiError(reply, badUrlFailure(request));
  } else {
    void sendApiError(reply, new ApiError(err.statusCode && err.statusCode < 500 ? err.statusCode : 400, 'BAD_REQUEST', err.message));
  }
}

/**
 * Node's HTTP parser refusing a request before Fastify sees it (a bare CR in a header value, a folded
 * header, headers too large, a request that took too long), answered in the API's error format as
 * Fastify's default handler would answer it in its own; the connection is closed afterwards.
 */
export function clientErrors(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, 'REQUEST_TIMEOUT', 'The request was not received in time']
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'The request headers are larger than this server accepts']
      : [400, 'BAD_REQUEST', 'The request is not valid HTTP (a header holds a control character, or is folded)'];
  const body = JSON.stringify({ error_code: code, message });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/** Routes with path parameters, per app: a malformed parameter is answered as that route refuses a bad one. */
interface ParamRoute { method: string; segments: string[]; codes: Record<string, ValidationCode> }
const paramRoutes = new WeakMap<FastifyInstance, ParamRoute[]>();

const undecodable = (segment: string): boolean => {
  try {
    decodeURIComponent(segment);
    return false;
  } catch {
    return true;
  }
};

/**
 * A path segment that is not valid percent-encoding fails before routing. When the URL matches a
 * route and the segment is one of its parameters, the answer is the route's own for an invalid
 * value of that parameter (a blob id: 404 BLOB_NOT_FOUND; a memory key: 422 MEMORY_KEY_INVALID),
 * else 422 VALIDATION_FAILED naming it; a URL that matches no route is 400 BAD_REQUEST.
 */
function badUrlFailure(request: FastifyRequest): ApiError {
  const segments = request.url.split('?')[0].split('/');
  const bad = segments.findIndex(undecodable);
  const route = (paramRoutes.get(request.server) ?? []).find((r) => r.method === request.method && r.segments.length === segments.length
    && r.segments.every((p, i) => p.startsWith(':') || p === segments[i]));
  const param = bad >= 0 ? route?.segments[bad] : undefined;
  if (!route || !param?.startsWith(':')) return new ApiError(400, 'BAD_REQUEST', 'The URL path is not valid (malformed percent-encoding)');
  return codedFailure(route.codes, 'params', param.slice(1), 'malformed percent-encoding', { detailFirst: true });
}

/**
 * An adapter's error that names how the API answers it (`publicStatus`, with its `code`): a
 * dependency of svc's that is down rather than a fault of svc's own, e.g. the blob store unreachable
 * (503 BLOB_STORE_UNAVAILABLE). Its own message stays in the log: it may name endpoints or buckets.
 */
interface PublicFailure { publicStatus: number; publicMessage: string; code: string }
const isPublicFailure = (err: unknown): err is PublicFailure =>
  typeof (err as PublicFailure | null)?.publicStatus === 'number' && typeof (err as PublicFailure).code === 'string';

/**
 * The app's error handler: ApiError, schema failures, an adapter's public failure and Fastify's 4xx
 * in the API format; anything else 500, logged.
 */
export function handleError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof ApiError) return sendApiError(reply, err);
  if (err.validation) return sendApiError(reply, validationFailure(err, request));
  if (isPublicFailure(err)) {
    request.log.error({ err }, 'a dependency failed');
    return sendApiError(reply, new ApiError(err.publicStatus, err.code, err.publicMessage, { request_id: request.id }));
  }
  const mapped = frameworkFailure(err);
  // A route whose body is mostly one bounded field answers an oversized body with that field's code.
  const tooLarge = (request.routeOptions?.config as { bodyTooLarge?: ValidationCode } | undefined)?.bodyTooLarge;
  if (mapped?.code === 'PAYLOAD_TOO_LARGE' && tooLarge) {
    return sendApiError(reply, new ApiError(tooLarge.status, tooLarge.code, tooLarge.message ?? mapped.message));
  }
  if (mapped) return sendApiError(reply, mapped);
  request.log.error({ err }, 'unhandled error');
  return reply.code(500).send({
    error_code: 'INTERNAL_ERROR',
    message: 'An unexpected error occurred; it has been logged.',
    request_id: request.id,
  });
}

/** Whether Fastify refused the request body as JSON it could not parse. */
export const isJsonParseError = (err: FastifyError): boolean => frameworkFailure(err)?.code === 'INVALID_JSON';

export function installErrorHandling(app: FastifyInstance): void {
  const routes: ParamRoute[] = [];
  paramRoutes.set(app, routes);
  app.addHook('onRoute', (r) => {
    if (!r.url.includes('/:')) return;
    const codes = (r.config as { validationCodes?: Record<string, ValidationCode> } | undefined)?.validationCodes ?? {};
    for (const method of [r.method].flat()) routes.push({ method, segments: r.url.split('/'), codes });
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error_code: 'ROUTE_NOT_FOUND', message: `No route for ${request.method} ${request.url.split('?')[0]}` }),
  );
}
