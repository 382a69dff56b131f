/**
 * Typed errors of the outbound web layer. `code` is the API's error code; the browse, parse and
 * discovery routes map it to HTTP (INVALID_URL 422, BROWSE_URL_BLOCKED 422, BROWSE_RESPONSE_TOO_LARGE
 * 413, BROWSE_PROVIDER_TIMEOUT 504, BROWSE_PROVIDER_ERROR 502, BROWSE_PROVIDER_UNCONFIGURED 503,
 * BROWSE_ROBOTS_DISALLOW 422: a redirect hop robots.txt does not allow, refused by the caller's check).
 * `reason` is a finer, stable machine-readable cause for logs and callers that need to tell
 * e.g. a DNS failure from an unsupported content type without parsing the message.
 */
export type WebErrorCode =
  | 'INVALID_URL'
  | 'BROWSE_URL_BLOCKED'
  | 'BROWSE_RESPONSE_TOO_LARGE'
  | 'BROWSE_PROVIDER_TIMEOUT'
  | 'BROWSE_PROVIDER_ERROR'
  | 'BROWSE_PROVIDER_UNCONFIGURED'
  | 'BROWSE_ROBOTS_DISALLOW';

export type WebErrorReason =
  | 'missing_url'
  | 'unparsable_url'
  | 'bad_scheme'
  | 'credentials_in_url'
  | 'port_not_allowed'
  | 'host_not_allowed'
  | 'address_not_allowed'
  | 'redirect_blocked'
  | 'too_many_redirects'
  | 'dns_failure'
  | 'connection_failed'
  | 'tls_failure'
  | 'upstream_failure'
  | 'unsupported_content_type'
  | 'unsupported_content_encoding'
  | 'too_large'
  | 'timeout'
  | 'renderer_unconfigured'
  | 'renderer_failure'
  | 'extraction_failed'
  | 'robots_disallow'
  /** robots.txt answered 5xx or could not be fetched: nothing is fetched there until it can be (RFC 9309). */
  | 'robots_unreachable';

export class WebError extends Error {
  constructor(
    public readonly code: WebErrorCode,
    public readonly reason: WebErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebError';
  }
}

export const isWebError = (e: unknown): e is WebError => e instanceof WebError;
