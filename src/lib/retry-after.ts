/**
 * The wait a `Retry-After` header value asks for, in seconds (RFC 9110 §10.2.3): delta-seconds, or an
 * HTTP-date counted from `now` (never below 0). Undefined when absent or neither form. One parser for
 * every upstream svc talks to (search providers, the embeddings server).
 */
export function retryAfterSeconds(value: string | string[] | null | undefined, now = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v);
  // Every HTTP-date form names its month; a bare "-1" or "1.5" is no date, whatever Date.parse makes of it.
  const at = /[A-Za-z]{3}/.test(v) ? Date.parse(v) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
