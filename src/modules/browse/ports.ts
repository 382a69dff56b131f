/**
 * Narrow ports of the browse module. The outbound web layer (src/infra/web, src/infra/renderer)
 * and billing satisfy them; app.ts wires the real ones (module.ts).
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { TierDefinition } from '../../lib/tiers';
import type { PageMeta } from '../../infra/web/page-meta';

export type BrowseMode = 'static' | 'dynamic';

/** The guarded outbound client (address policy at connect time, redirects re-checked, caps). */
export interface PageFetcher {
  /** INVALID_URL / BROWSE_URL_BLOCKED from the URL alone (WebError). */
  checkUrl(url: unknown): URL;
  /** Name resolution of a URL checkUrl returned, every answer checked (BROWSE_URL_BLOCKED / dns_failure). */
  resolve(url: URL): Promise<void>;
  /** `checkRedirect` sees each redirect target before it is requested; a WebError it throws ends the fetch. */
  fetch(url: string, opts?: { checkRedirect?: (next: URL) => Promise<void> }): Promise<{ status: number; finalUrl: string; body: Buffer; contentType: string }>;
}

export interface RobotsCheck {
  /** 'disallowed' by a rule of the site's robots.txt; 'unreachable' when it answered 5xx or could not be fetched (RFC 9309: then nothing is allowed). */
  decide(url: string | URL): Promise<'allowed' | 'disallowed' | 'unreachable'>;
}

export interface PageExtractor {
  extract(input: { body: Buffer; contentType: string; url?: string }): Promise<{ title: string; text: string; meta?: PageMeta }>;
}

/** Headless Chromium; `configured` false when no executable is set or found. */
export interface PageRenderer {
  readonly configured: boolean;
  /** `checkFetch` sees every request of the page (main-frame documents and sub-requests) before it is fetched. */
  render(url: string, opts?: { checkFetch?: (url: URL, mainFrame: boolean) => Promise<void> }): Promise<{ finalUrl: string; status: number; contentType: string; title: string; text: string; meta?: PageMeta }>;
}

/**
 * Billing, for one browse (static or dynamic price). `check` before fetching refuses early (429
 * BROWSE_LIMIT / 402 INSUFFICIENT_CREDITS) without charging; `chargeWithin` charges inside the
 * transaction that logs the browse, so the charge and the record commit together or not at all.
 */
export interface BrowseMeter {
  check(agentId: string, storedTier: string, mode: BrowseMode): Promise<void>;
  chargeWithin(trx: Transaction<Database>, agentId: string, storedTier: string, mode: BrowseMode): Promise<{ committed(): Promise<object> }>;
}

/** The tier the agent is billed on (purchases can raise the stored tier). */
/** The agent's trust levels (the trust layer's one function, through identity). */
export type TrustLevelReader = (agentId: string) => Promise<string[]>;

export interface TierReader {
  effectiveTier(agentId: string, storedTier: string): Promise<TierDefinition>;
}
