/**
 * The outbound web layer: the SSRF-guarded client, robots.txt policy and page extraction, built
 * from settings. See docs/outbound-web.md for the policy, ports, limits and robots semantics.
 */
import type { Config } from '../../config';
import type { Clock } from '../../lib/clock';
import { createExtractor, type Extractor } from './extractor';
import { createGuardedClient, type GuardedClient } from './guarded-client';
import { createRobotsPolicy, type RobotsPolicy } from './robots';
import type { Resolver } from './url-policy';

export { WebError, isWebError, type WebErrorCode, type WebErrorReason } from './errors';
export { createGuardedClient, DEFAULT_USER_AGENT, type GuardedClient, type GuardedClientOptions, type FetchOptions, type FetchResult } from './guarded-client';
export { validatePublicUrl, checkUrl, systemResolver, DEFAULT_ALLOWED_PORTS, type Resolver, type ResolvedAddress, type UrlPolicyOptions } from './url-policy';
export { addressProblem, hostProblem } from './address-policy';
export { createRobotsPolicy, ROBOTS_TOKEN, type RobotsPolicy } from './robots';
export { createExtractor, type Extractor, type ExtractInput } from './extractor';

export interface OutboundWeb {
  client: GuardedClient;
  robots: RobotsPolicy;
  extractor: Extractor;
  close(): Promise<void>;
}

export function createOutboundWebFromConfig(
  config: Pick<Config, 'core' | 'web'>,
  deps: { clock: Clock; resolver?: Resolver; allowAddresses?: string[] },
): OutboundWeb {
  const w = config.web;
  const client = createGuardedClient({
    allowLoopback: config.core.outboundAllowLoopback,
    allowAddresses: deps.allowAddresses,
    allowedPorts: w.outboundAllowedPorts,
    resolver: deps.resolver,
    userAgent: w.browseUserAgent,
    maxBytes: w.browseMaxBytes,
    timeoutMs: w.browseTimeoutMs,
    maxRedirects: w.outboundMaxRedirects,
  });
  const robots = createRobotsPolicy({
    client,
    clock: deps.clock,
    ttlMs: w.robotsCacheSeconds * 1000,
    errorTtlMs: w.robotsErrorCacheSeconds * 1000,
  });
  const extractor = createExtractor({ timeoutMs: w.browseTimeoutMs });
  return {
    client,
    robots,
    extractor,
    async close() {
      await extractor.close();
      await client.close();
    },
  };
}
