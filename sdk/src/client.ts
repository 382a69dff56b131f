/**
 * The client: openapi-fetch over the generated `paths`, with the key sent as a Bearer, plus `ok()`,
 * which turns svc's error body into a thrown SvcError, and the type helpers the other modules use to
 * name a route's JSON body from the generated types.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/openapi';

export type { paths, components, operations } from './generated/openapi';

export const SDK_VERSION = '0.1.0';

export type SvcClient = Client<paths> & {
  /** The base URL the client calls, without a trailing slash. */
  readonly baseUrl: string;
};

export interface ClientOptions {
  /** svc's address, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** A root or scoped `svc_…` key, or a `svc_session_…` token; sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Another fetch (tests, proxies). */
  fetch?: (input: Request) => Promise<Response>;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export function createSvcClient(opts: ClientOptions): SvcClient {
  const baseUrl = opts.baseUrl.replace(/\/+$/, '');
  const client = createClient<paths>({
    baseUrl,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    headers: {
      'user-agent': `svc-sdk/${SDK_VERSION}`,
      ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
      ...opts.headers,
    },
  });
  return Object.assign(client, { baseUrl });
}

/** svc refused a request: its `{error_code, message, ...}` body with the HTTP status. */
export class SvcError extends Error {
  readonly status: number;
  /** svc's error_code, or `HTTP_<status>` when the body was not svc's error body. */
  readonly errorCode: string;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    const rec = isRecord(body) ? body : {};
    const code = typeof rec.error_code === 'string' ? rec.error_code : `HTTP_${status}`;
    const message = typeof rec.message === 'string' ? rec.message : typeof body === 'string' && body ? body.slice(0, 500) : `svc answered ${status}`;
    super(`${code}: ${message}`);
    this.name = 'SvcError';
    this.status = status;
    this.errorCode = code;
    this.body = body;
  }
}

/** An answer svc gave that lacks what the SDK needs from it (a field missing or of another type). */
export class SvcProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SvcProtocolError';
  }
}

/**
 * `T`, or `unknown` where openapi-fetch says `never`: an answer without a body (204). Every JSON
 * answer of svc is described in its document, so its exact type comes through `ok()`.
 */
export type Known<T> = [T] extends [never] ? unknown : T;

/** The JSON body of `status` of `method` on `path`, from the generated types (unknown when not JSON). */
export type JsonBody<P extends keyof paths, M extends keyof paths[P], S extends number = 200> =
  paths[P][M] extends { responses: infer R }
    ? S extends keyof R
      ? R[S] extends { content: { 'application/json': infer B } } ? B : unknown
      : unknown
    : unknown;

/** The element type of the array `K` of a body (unknown when the body has no such array). */
export type ItemOf<B, K extends string> = B extends { [k in K]: Array<infer I> } ? I : unknown;

type Result = { data?: unknown; error?: unknown; response: Response };

/** The body of a successful answer, typed by the route; throws SvcError with svc's error body otherwise. */
export async function ok<R extends Result>(pending: Promise<R> | R): Promise<Known<Exclude<R['data'], undefined>>> {
  const r = await pending;
  if (!r.response.ok) throw new SvcError(r.response.status, r.error);
  return r.data as Known<Exclude<R['data'], undefined>>;
}

/** A JSON object (not null, not an array): for bodies the types cannot vouch for (error bodies, printing). */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
