/**
 * One JSON call to a search provider with a hard time limit (headers and body), a body size cap,
 * and every failure turned into a SearchProviderError. Provider base URLs are operator settings,
 * not user input, so this uses plain undici rather than the SSRF-guarded client: a self-hosted
 * SearXNG usually lives on loopback or the LAN, which the guard rightly refuses.
 */
import { request, type Dispatcher } from 'undici';
import { SearchProviderError, type SearchErrorReason } from './types';
import { retryAfterSeconds } from '../../lib/retry-after';

export interface ProviderHttpOptions {
  timeoutMs: number;
  /** Body cap in bytes; providers answer a few KB to a few hundred KB. */
  maxBytes?: number;
  dispatcher?: Dispatcher;
}

export interface JsonCall {
  provider: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /**
   * Provider-specific reading of an error answer (e.g. Brave's 422 SUBSCRIPTION_TOKEN_INVALID).
   * `retryAfterSeconds` is used when the answer has no standard Retry-After header (Brave reports
   * its limits in X-RateLimit-Reset instead).
   */
  classify?: (status: number, body: unknown, headers: ResponseHeaders) => ErrorReading | undefined;
}

export type ResponseHeaders = Dispatcher.ResponseData['headers'];
export interface ErrorReading {
  reason?: SearchErrorReason;
  detail?: string;
  retryAfterSeconds?: number;
}

const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;

class TooLarge extends Error {}

async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      body.destroy();
      throw new TooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function defaultReason(status: number): SearchErrorReason {
  if (status === 401 || status === 403) return 'auth';
  if (status === 429) return 'rate_limited';
  if (status === 402) return 'quota';
  return 'http_status';
}

const short = (s: string): string => s.replace(/\s+/g, ' ').trim().slice(0, 200);

/** Returns the parsed JSON of a 2xx answer; throws SearchProviderError for everything else. */
export async function callJson(call: JsonCall, opts: ProviderHttpOptions, signal?: AbortSignal): Promise<unknown> {
  const { provider } = call;
  if (signal?.aborted) throw new SearchProviderError('SEARCH_ABORTED', provider, 'aborted', `${provider}: request aborted by caller`);
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    const res = await request(call.url, {
      method: call.method,
      headers: call.headers,
      body: call.body,
      signal: combined,
      dispatcher: opts.dispatcher,
    });
    const text = await readCapped(res.body, opts.maxBytes ?? DEFAULT_MAX_BYTES);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const parsed = tryJson(text);
      const c = call.classify?.(res.statusCode, parsed, res.headers);
      const reason = c?.reason ?? defaultReason(res.statusCode);
      const detail = c?.detail ?? short(text);
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', provider, reason,
        `${provider} answered HTTP ${res.statusCode}${detail ? `: ${detail}` : ''}`,
        { status: res.statusCode, retryAfterSeconds: retryAfterSeconds(res.headers['retry-after']) ?? c?.retryAfterSeconds });
    }
    const json = tryJson(text);
    if (json === undefined) {
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', provider, 'malformed',
        `${provider} answered HTTP ${res.statusCode} with a body that is not JSON`, { status: res.statusCode });
    }
    return json;
  } catch (err) {
    if (err instanceof SearchProviderError) throw err;
    // Which signal fired decides the code; the error undici throws looks the same for both.
    if (signal?.aborted) throw new SearchProviderError('SEARCH_ABORTED', provider, 'aborted', `${provider}: request aborted by caller`, { cause: err });
    if (timeout.aborted) {
      throw new SearchProviderError('SEARCH_PROVIDER_TIMEOUT', provider, 'timeout', `${provider} did not answer within ${opts.timeoutMs} ms`, { cause: err });
    }
    if (err instanceof TooLarge) {
      throw new SearchProviderError('SEARCH_PROVIDER_ERROR', provider, 'too_large', `${provider} answer exceeded ${opts.maxBytes ?? DEFAULT_MAX_BYTES} bytes`);
    }
    const msg = err instanceof Error ? err.message : String(err);
    throw new SearchProviderError('SEARCH_PROVIDER_ERROR', provider, 'network', `${provider} request failed: ${short(msg)}`, { cause: err });
  }
}
