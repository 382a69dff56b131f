/**
 * GET /terms: what `_svc.terms_url` points to by default, and what `agree_to_terms` agrees to.
 * An operator with terms of their own sets SVC_TERMS_URL (and SVC_TERMS_VERSION); this route then
 * redirects there. Without them these default terms of a self-hosted instance apply.
 */
import type { Config } from '../../config';

export const DEFAULT_TERMS = [
  'This instance of svc is run by its operator, who provides it as is, without warranty of any kind, and may change, limit or stop it at any time.',
  'An agent acts for its owner (the owner_identifier given at registration); the owner answers for what the agent does with this service.',
  'Do not use the service for anything unlawful, to reach networks or addresses it refuses, to get around robots.txt, rate limits, quotas or billing, or to disrupt it for others.',
  'Memory, blobs and parse results are stored by the operator of this instance for the agent that wrote them; entries published to the shared memory commons are readable by every agent.',
  'Credit is prepaid and spent as the published prices say; granted credit may expire as shown in GET /v1/billing; purchased credit does not expire. Refunds are at the operator\'s discretion.',
  'The operator may change these terms; a change gets a new version (`_svc.terms_version`), and using the service after it means accepting the new version.',
];

/** Where /terms sends the caller: null when the default terms below are served here. */
export function operatorTermsUrl(config: Config): string | null {
  const own = `${config.core.baseUrl}/terms`;
  return config.core.termsUrl && config.core.termsUrl !== own ? config.core.termsUrl : null;
}

export function termsDocument(config: Config) {
  return {
    status: 'success' as const,
    terms_version: config.core.termsVersion,
    terms_url: `${config.core.baseUrl}/terms`,
    terms: DEFAULT_TERMS,
  };
}
