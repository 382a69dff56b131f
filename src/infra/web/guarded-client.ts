/**
 * The one outbound HTTP client for URLs a user can steer (browse, the renderer's sub-requests,
 * parse callbacks, agent cards). It is an undici Agent whose connector resolves names itself,
 * refuses the connection if any answer is outside the address policy, connects to the checked IP
 * literal (TLS still verifies the certificate against the original name via SNI/servername) and
 * re-checks the socket's actual remote address once connected. Redirects are followed by hand,
 * each hop validated again, at most `maxRedirects`. One timer bounds the whole exchange
 * (connect, redirects, headers, body); the body is streamed and cut off past `maxBytes`.
 * Non-2xx statuses are returned, not thrown: the caller decides what a 404 means.
 */
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { isIP, type Socket } from 'node:net';
import { addressProblem, normaliseHost, unbracket } from './address-policy';
import { readCapped, type ByteBudget, type OversizePolicy } from './body';
import { WebError, isWebError } from './errors';
import { checkUrl, resolveAllowed, systemResolver, type ResolvedAddress, type Resolver, type UrlPolicyOptions } from './url-policy';

export interface GuardedClientOptions extends UrlPolicyOptions {
  resolver?: Resolver;
  userAgent?: string;
  /** Defaults for fetch(). */
  maxBytes?: number;
  timeoutMs?: number;
  maxRedirects?: number;
  connectTimeoutMs?: number;
}

export interface FetchOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer | Uint8Array;
  maxBytes?: number;
  timeoutMs?: number;
  /** Default true. The renderer passes false so Chromium sees (and re-routes) each hop itself. */
  followRedirects?: boolean;
  /** Called with each redirect target (already past the URL policy) before it is requested; a throw (a WebError) ends the fetch. */
  checkRedirect?: (next: URL) => Promise<void> | void;
  /**
   * Bytes shared with other fetches (a render's sub-requests): the body draws on it as it is read, and
   * BROWSE_RESPONSE_TOO_LARGE ends the fetch when it runs out (at once when Content-Length says so).
   */
  budget?: ByteBudget;
  /** 'error' (default) throws BROWSE_RESPONSE_TOO_LARGE; 'truncate' keeps the first maxBytes (robots.txt). */
  onOversize?: OversizePolicy;
  signal?: AbortSignal;
}

export interface FetchResult {
  status: number;
  headers: Record<string, string>;
  finalUrl: string;
  body: Buffer;
  contentType: string;
  redirects: number;
  truncated: boolean;
}

export interface GuardedClient {
  fetch(url: string, opts?: FetchOptions): Promise<FetchResult>;
  /** Syntax + policy checks without network (INVALID_URL / BROWSE_URL_BLOCKED). */
  checkUrl(url: unknown, opts?: { httpsOnly?: boolean }): URL;
  /** checkUrl plus resolution with every address checked. */
  validatePublicUrl(url: unknown, opts?: { httpsOnly?: boolean }): Promise<URL>;
  /**
   * The resolution half of validatePublicUrl for a URL checkUrl returned (browse holds one already;
   * parsing and checking its text again would change nothing): the host resolved and every address checked.
   */
  resolve(url: URL): Promise<void>;
  close(): Promise<void>;
}

export const DEFAULT_USER_AGENT = 'Mozilla/5.0 (compatible; svc-browse/1.0)';
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
// Never forwarded from callers: undici or the hop itself owns these.
const DROPPED_REQUEST_HEADERS = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade', 'expect', 'te', 'trailer', 'proxy-connection', 'proxy-authorization', 'cookie']);
const CROSS_ORIGIN_DROPPED = ['authorization'];
const RETRYABLE_CONNECT = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** Drops a body we will not read; undici emits an abort error on destroy, which is expected here. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

function tlsCode(code: string): boolean {
  return code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT') || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || code === 'EPROTO';
}

/** Maps anything thrown during an exchange to a WebError. */
function toWebError(err: unknown, timedOut: boolean, host: string): WebError {
  if (timedOut) return new WebError('BROWSE_PROVIDER_TIMEOUT', 'timeout', `No complete answer from ${host} in time.`);
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isWebError(e)) return e;
  }
  const code = String((err as NodeJS.ErrnoException)?.code ?? '');
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new WebError('BROWSE_PROVIDER_TIMEOUT', 'timeout', `Timed out talking to ${host}.`);
  }
  if (tlsCode(code)) return new WebError('BROWSE_PROVIDER_ERROR', 'tls_failure', `TLS failure with ${host} (${code}).`);
  if (['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'UND_ERR_SOCKET', 'ECONNABORTED'].includes(code)) {
    return new WebError('BROWSE_PROVIDER_ERROR', 'connection_failed', `Connection to ${host} failed (${code}).`);
  }
  return new WebError('BROWSE_PROVIDER_ERROR', 'upstream_failure', `Request to ${host} failed${code ? ` (${code})` : ''}.`);
}

function guardedConnector(policy: UrlPolicyOptions, resolver: Resolver, timeout: number): buildConnector.connector {
  const base = buildConnector({ timeout });
  return (opts, callback) => {
    const host = unbracket(opts.hostname);
    const servername = opts.servername ?? (isIP(host) ? undefined : normaliseHost(host));
    // Every answer was checked; try them in order until one accepts a connection.
    const attempt = (addresses: ResolvedAddress[], i: number) => {
      base({ ...opts, hostname: addresses[i].address, servername }, (err, socket) => {
        if (err || !socket) {
          if (i + 1 < addresses.length && RETRYABLE_CONNECT.has(String((err as NodeJS.ErrnoException)?.code))) return attempt(addresses, i + 1);
          return callback(err ?? new Error('no socket'), null);
        }
        // Belt and braces: judge the peer we actually reached, not the one we meant to.
        const remote = (socket as Socket).remoteAddress;
        const problem = remote ? addressProblem(remote, policy) : 'unknown peer address';
        if (problem) {
          socket.destroy();
          return callback(new WebError('BROWSE_URL_BLOCKED', 'address_not_allowed', `Connected peer is a ${problem}.`), null);
        }
        callback(null, socket);
      });
    };
    resolveAllowed(host, policy, resolver).then(
      (addresses) => attempt(addresses, 0),
      (err) => callback(err, null),
    );
  };
}

export function createGuardedClient(opts: GuardedClientOptions): GuardedClient {
  const policy: UrlPolicyOptions = { allowLoopback: opts.allowLoopback, allowAddresses: opts.allowAddresses, allowedPorts: opts.allowedPorts };
  const resolver = opts.resolver ?? systemResolver;
  const defaults = {
    maxBytes: opts.maxBytes ?? 5 * 1024 * 1024,
    timeoutMs: opts.timeoutMs ?? 15_000,
    maxRedirects: opts.maxRedirects ?? 5,
  };
  const agent = new Agent({
    connect: guardedConnector(policy, resolver, opts.connectTimeoutMs ?? 10_000),
    keepAliveTimeout: 4_000,
    connections: 32,
  });

  function baseHeaders(extra: Record<string, string> | undefined): Record<string, string> {
    const headers: Record<string, string> = {
      'user-agent': opts.userAgent ?? DEFAULT_USER_AGENT,
      accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8',
      'accept-encoding': 'gzip, deflate, br',
    };
    for (const [k, v] of Object.entries(extra ?? {})) {
      const key = k.toLowerCase();
      if (!DROPPED_REQUEST_HEADERS.has(key)) headers[key] = v;
    }
    return headers;
  }

  async function exchange(start: URL, f: FetchOptions, signal: AbortSignal): Promise<FetchResult> {
    let url = start;
    let method = (f.method ?? 'GET').toUpperCase();
    let body = f.body;
    let headers = baseHeaders(f.headers);
    const maxRedirects = f.followRedirects === false ? 0 : defaults.maxRedirects;
    const maxBytes = f.maxBytes ?? defaults.maxBytes;
    for (let hop = 0; ; hop++) {
      let res: Dispatcher.ResponseData;
      try {
        res = await agent.request({
          origin: url.origin,
          path: url.pathname + url.search,
          method: method as Dispatcher.HttpMethod,
          headers,
          body: body ?? null,
          signal,
          headersTimeout: 0,
          bodyTimeout: 0,
        });
      } catch (err) {
        // The connect-time check refused a redirect target (e.g. a name that rebound to an internal
        // address): that is a refused redirect. `address_not_allowed` stays for the URL asked for.
        if (hop > 0 && isWebError(err) && err.reason === 'address_not_allowed') {
          throw new WebError('BROWSE_URL_BLOCKED', 'redirect_blocked', `Redirect refused: ${err.message}`);
        }
        throw err;
      }
      const resHeaders = flattenHeaders(res.headers as Record<string, string | string[] | undefined>);
      const location = resHeaders.location;
      if (f.followRedirects !== false && REDIRECT_STATUSES.has(res.statusCode) && location) {
        discard(res.body);
        if (hop >= maxRedirects) throw new WebError('BROWSE_PROVIDER_ERROR', 'too_many_redirects', `More than ${maxRedirects} redirects.`);
        let next: URL;
        try {
          next = checkUrl(new URL(location, url).href, policy);
        } catch (err) {
          const why = isWebError(err) ? err.message : 'unparsable location';
          throw new WebError('BROWSE_URL_BLOCKED', 'redirect_blocked', `Redirect refused: ${why}`);
        }
        if (f.checkRedirect) {
          try {
            await f.checkRedirect(next);
          } catch (err) {
            // The check's own connection to the hop's site (robots.txt) found its address refused: a
            // refused redirect, as when the hop itself is refused at connect.
            if (isWebError(err) && err.reason === 'address_not_allowed') {
              throw new WebError('BROWSE_URL_BLOCKED', 'redirect_blocked', `Redirect refused: ${err.message}`);
            }
            throw err;
          }
        }
        if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          body = undefined;
          const { ['content-type']: _ct, ...rest } = headers;
          headers = rest;
        }
        if (next.origin !== url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CROSS_ORIGIN_DROPPED.includes(k)));
        url = next;
        continue;
      }
      const declared = Number(resHeaders['content-length']);
      const encoded = (resHeaders['content-encoding'] ?? 'identity') !== 'identity';
      const allowed = f.budget ? Math.min(maxBytes, f.budget.left) : maxBytes;
      if (f.onOversize !== 'truncate' && !encoded && Number.isFinite(declared) && declared > allowed) {
        discard(res.body);
        throw new WebError('BROWSE_RESPONSE_TOO_LARGE', 'too_large', `Response body of ${declared} bytes exceeds ${allowed}.`);
      }
      // A declared length that fits is taken from the shared budget whole before reading: answers read
      // at the same time then arrive whole or are refused whole, instead of each drawing on the budget
      // chunk by chunk until all of them may be cut part-way, useless to the page.
      let budget = f.budget;
      let cap = maxBytes;
      if (budget && method !== 'HEAD' && !encoded && Number.isFinite(declared) && declared <= maxBytes) {
        if (!budget.take(declared)) {
          discard(res.body);
          throw new WebError('BROWSE_RESPONSE_TOO_LARGE', 'too_large', 'The byte budget shared by this fetch and others ran out.');
        }
        budget = undefined;
        cap = declared;
      }
      const read = method === 'HEAD' ? { body: Buffer.alloc(0), truncated: false } : await readCapped(res.body, resHeaders['content-encoding'], cap, f.onOversize ?? 'error', budget);
      return {
        status: res.statusCode,
        headers: resHeaders,
        finalUrl: url.href,
        body: read.body,
        contentType: resHeaders['content-type'] ?? '',
        redirects: hop,
        truncated: read.truncated,
      };
    }
  }

  return {
    async fetch(input, f = {}) {
      const url = checkUrl(input, policy);
      const timeoutMs = f.timeoutMs ?? defaults.timeoutMs;
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs);
      const onOuterAbort = () => controller.abort();
      f.signal?.addEventListener('abort', onOuterAbort, { once: true });
      try {
        return await exchange(url, f, controller.signal);
      } catch (err) {
        if (!timedOut && f.signal?.aborted) throw new WebError('BROWSE_PROVIDER_ERROR', 'upstream_failure', 'Request cancelled.');
        throw toWebError(err, timedOut, url.host);
      } finally {
        clearTimeout(timer);
        f.signal?.removeEventListener('abort', onOuterAbort);
      }
    },
    checkUrl: (u, o) => checkUrl(u, { ...policy, httpsOnly: o?.httpsOnly }),
    async validatePublicUrl(u, o) {
      const url = checkUrl(u, { ...policy, httpsOnly: o?.httpsOnly });
      await resolveAllowed(url.hostname, policy, resolver);
      return url;
    },
    async resolve(url) {
      await resolveAllowed(url.hostname, policy, resolver);
    },
    close: () => agent.close(),
  };
}
