/**
 * What the request log may show of a URL: signed blob URLs carry their credential in the query
 * (`signature`, valid up to a day without a key), so its value is replaced before logging.
 */
const SECRET_QUERY = /([?&](?:signature|sig|token|key)=)[^&#]*/gi;

export const redactUrl = (url: string): string => (url.includes('=') ? url.replace(SECRET_QUERY, '$1[redacted]') : url);

/** Fastify's request serializer, with the URL redacted (the other fields as Fastify logs them). */
export function requestSerializer(req: { method: string; url: string; hostname?: string; ip?: string; socket?: { remotePort?: number } }) {
  return { method: req.method, url: redactUrl(req.url), host: req.hostname, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}
