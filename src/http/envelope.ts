import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config';
import type { Clock } from '../lib/clock';
import { tierOf } from '../lib/tiers';

/** The four founding-period statistics carried as `_svc.community` and served by GET /v1/community. */
export interface CommunityStats {
  agents_registered: number;
  agents_registered_last_7d: number;
  directory_listed: number;
  founding_period_ends_at: string;
  /** Synthetic founding profiles in the directory (operator configuration), not counted in directory_listed. */
  directory_synthetic_profiles?: number;
}

export interface SvcEnvelope {
  served_by: string;
  register_url: string;
  discover_url: string;
  guide_url: string;
  feedback_url: string;
  browse_url: string;
  terms_url: string;
  terms_version: string;
  tier_description?: string;
  community: CommunityStats;
  [extra: string]: unknown;
}

export interface EnvelopeBuilder {
  build(extra?: { tier?: string; fields?: Record<string, unknown> }): Promise<SvcEnvelope>;
}

/** Builds `_svc`; community statistics are computed from real data and cached for a minute. */
export function createEnvelopeBuilder(
  config: Config['core'],
  clock: Clock,
  communityStats: () => Promise<CommunityStats>,
): EnvelopeBuilder {
  const base = config.baseUrl;
  const servedBy = config.instanceId === 'host' ? `${hostname()}:${process.pid}` : config.instanceId ?? `svc-${randomBytes(4).toString('hex')}`;
  let cached: { at: number; value: Promise<CommunityStats> } | undefined;
  const community = (): Promise<CommunityStats> => {
    const now = clock.now();
    if (!cached || now - cached.at > 60_000) {
      const value = communityStats();
      cached = { at: now, value };
      value.catch(() => (cached = undefined));
    }
    return cached.value;
  };
  return {
    async build(extra = {}) {
      const env: SvcEnvelope = {
        served_by: servedBy,
        register_url: `${base}/v1/register`,
        discover_url: `${base}/v1/capabilities`,
        guide_url: `${base}/v1/guide`,
        feedback_url: `${base}/v1/feedback`,
        browse_url: `${base}/v1/browse`,
        terms_url: config.termsUrl,
        terms_version: config.termsVersion,
        community: await community(),
      };
      if (extra.tier) env.tier_description = tierOf(extra.tier).description;
      return Object.assign(env, extra.fields ?? {});
    },
  };
}
