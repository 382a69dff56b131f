/**
 * URL-level checks (scheme, credentials, port, host) and name resolution with every answer
 * checked. Used both before a request (early validation) and by the connector at connect time,
 * so a name that changes its answer between the two (DNS rebinding) is caught at the second look.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { addressProblem, hostProblem, isExemptHost, normaliseHost, type AddressPolicyOptions } from './address-policy';
import { WebError } from './errors';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses. Injectable so tests can point names anywhere. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Ports reachable by default: the web's own. Loopback under the test allowance is exempt. */
export const DEFAULT_ALLOWED_PORTS: readonly number[] = [80, 443, 8080, 8443];

export const MAX_URL_LENGTH = 8192;

export interface UrlPolicyOptions extends AddressPolicyOptions {
  allowedPorts?: readonly number[];
  /** Refuse plain http (callback_url, agent_card_url). */
  httpsOnly?: boolean;
}

/**
 * Parses and checks a URL without touching the network. Throws INVALID_URL for a missing,
 * unparsable or non-http(s) URL and BROWSE_URL_BLOCKED for one the policy refuses.
 * The returned URL has its fragment removed (it is never sent).
 */
export function checkUrl(input: unknown, opts: UrlPolicyOptions): URL {
  if (typeof input !== 'string' || input.trim() === '') throw new WebError('INVALID_URL', 'missing_url', 'A URL is required.');
  if (input.length > MAX_URL_LENGTH) throw new WebError('INVALID_URL', 'unparsable_url', `URL longer than ${MAX_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw new WebError('INVALID_URL', 'unparsable_url', 'The URL could not be parsed.');
  }
  const schemes = opts.httpsOnly ? ['https:'] : ['http:', 'https:'];
  if (!schemes.includes(url.protocol)) {
    throw new WebError('INVALID_URL', 'bad_scheme', `Scheme ${url.protocol} is not allowed; use ${schemes.map((s) => s.slice(0, -1)).join(' or ')}.`);
  }
  if (url.username || url.password) throw new WebError('BROWSE_URL_BLOCKED', 'credentials_in_url', 'URLs with credentials are not allowed.');
  const problem = hostProblem(url.hostname, opts);
  if (problem) throw new WebError('BROWSE_URL_BLOCKED', isIP(normaliseHost(url.hostname)) ? 'address_not_allowed' : 'host_not_allowed', `Host not allowed: ${problem}.`);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const ports = opts.allowedPorts ?? DEFAULT_ALLOWED_PORTS;
  if (!ports.includes(port) && !isExemptHost(url.hostname, opts)) {
    throw new WebError('BROWSE_URL_BLOCKED', 'port_not_allowed', `Port ${port} is not allowed; allowed ports: ${ports.join(', ')}.`);
  }
  url.hash = '';
  return url;
}

/**
 * Resolves a host (or takes an IP literal as is) and checks every address. Refuses the host if
 * ANY answer is refused: an attacker who controls DNS can mix public and private answers, and
 * which one a connector would pick must not decide safety.
 */
export async function resolveAllowed(rawHost: string, opts: AddressPolicyOptions, resolver: Resolver): Promise<ResolvedAddress[]> {
  const host = normaliseHost(rawHost);
  const problem = hostProblem(host, opts);
  if (problem) throw new WebError('BROWSE_URL_BLOCKED', 'host_not_allowed', `Host not allowed: ${problem}.`);
  const literal = isIP(host);
  if (literal) return [{ address: host, family: literal === 6 ? 6 : 4 }];
  let answers: ResolvedAddress[];
  try {
    answers = await resolver(host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
    throw new WebError('BROWSE_PROVIDER_ERROR', 'dns_failure', `Could not resolve ${host} (${code}).`);
  }
  if (answers.length === 0) throw new WebError('BROWSE_PROVIDER_ERROR', 'dns_failure', `${host} has no addresses.`);
  for (const a of answers) {
    const bad = addressProblem(a.address, opts);
    if (bad) throw new WebError('BROWSE_URL_BLOCKED', 'address_not_allowed', `${host} resolves to a ${bad}.`);
  }
  return answers;
}

/**
 * Full early validation: URL checks plus resolution, for URLs stored now and fetched later
 * (callback_url, agent_card_url with `httpsOnly`). The fetch re-checks at connect time anyway.
 */
export async function validatePublicUrl(
  input: unknown,
  opts: UrlPolicyOptions & { resolver?: Resolver } = { allowLoopback: false },
): Promise<URL> {
  const url = checkUrl(input, opts);
  await resolveAllowed(url.hostname, opts, opts.resolver ?? systemResolver);
  return url;
}
