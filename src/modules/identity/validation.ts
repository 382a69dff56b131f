import { isIP } from 'node:net';
import { hmacHex, safeEqual } from '../../lib/hash';

/**
 * Syntactic and policy check of a client-supplied external URL stored for later fetching
 * (agent_card_url). Must be https, no credentials, a public-looking host name (no IP literal,
 * no localhost / .local / .internal / .localhost names). Fetches go through the guarded client.
 */
export function externalUrlProblem(raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'not a valid URL';
  }
  if (u.protocol !== 'https:') return 'must use https';
  if (u.username || u.password) return 'must not carry credentials';
  if (raw.length > 2048) return 'longer than 2048 characters';
  // A fully qualified name may end in dots (`localhost.`): the checks read the name without them.
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.+$/, '');
  if (isIP(host) || /^[0-9.]+$/.test(host) || /^0x/i.test(host)) return 'must name a host, not an IP address';
  if (!host.includes('.')) return 'must be a fully qualified public host name';
  if (host === 'localhost' || /\.(localhost|local|internal|lan|home|corp|intranet)$/.test(host)) return 'must be a public host';
  return undefined;
}

/**
 * declared_affiliation_token: `<org>.<hex HMAC-SHA256(secret, org)>` issued by the operator.
 * Returns the organisation for a valid token and undefined for anything else (ignored, never an error).
 */
export function affiliationOf(token: string | undefined, secret: string | undefined): string | undefined {
  if (!token || !secret) return undefined;
  const dot = token.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const org = token.slice(0, dot);
  const mac = token.slice(dot + 1);
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(org) || !/^[0-9a-f]{64}$/.test(mac)) return undefined;
  return safeEqual(mac, hmacHex(secret, org)) ? org : undefined;
}
