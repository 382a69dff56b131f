/**
 * POST /v1/browse and GET /v1/browse/{id}.
 *
 * Order of checks (cheap and local first; nothing is charged until a page is about to be fetched):
 *   mode (422 BROWSE_MODE_UNSUPPORTED) → URL syntax/policy (422 INVALID_URL / BROWSE_URL_BLOCKED)
 *   → dynamic only: trust (403 BROWSE_DYNAMIC_TRUST_TIER), renderer (503 BROWSE_PROVIDER_UNCONFIGURED)
 *   → name resolution with every address checked (422 BROWSE_URL_BLOCKED) → robots.txt
 *   (422 BROWSE_ROBOTS_DISALLOW, also for any redirect hop or main-frame document on the way; BROWSE_URL_BLOCKED when its connection finds the host rebound) → credit check (429 BROWSE_LIMIT / 402 INSUFFICIENT_CREDITS; made while robots.txt is read, reported after it) → fetch or
 *   render → extract → charge and log in one transaction. A failed fetch or extraction is never charged.
 * Any HTTP status the site answers (404, 500 ...) is a completed browse: the record carries it in
 * http_status with the extracted text of that page. A NUL character in the page's text or title is
 * dropped (as an HTML parser drops it from body text): PostgreSQL's text cannot hold it. Failures to get an answer at all are errors:
 * 413 BROWSE_RESPONSE_TOO_LARGE, 502 BROWSE_PROVIDER_ERROR, 504 BROWSE_PROVIDER_TIMEOUT.
 */
import { performance } from 'node:perf_hooks';
import { storableText } from '../../lib/text';
import { ApiError } from '../../http/errors';
import { iso, type Clock } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { isWebError, WebError } from '../../infra/web/errors';
import type { ActivitySource } from '../usage/activity-types';
import type { BrowseMeter, BrowseMode, PageExtractor, PageFetcher, PageRenderer, RobotsCheck } from './ports';
import type { BrowseRow, BrowseStore } from './store';
import type { Probation, TrustInput } from './trust';

const WEB_STATUS: Record<string, number> = {
  INVALID_URL: 422, BROWSE_URL_BLOCKED: 422, BROWSE_ROBOTS_DISALLOW: 422, BROWSE_RESPONSE_TOO_LARGE: 413,
  BROWSE_PROVIDER_TIMEOUT: 504, BROWSE_PROVIDER_ERROR: 502, BROWSE_PROVIDER_UNCONFIGURED: 503,
};

export function webErrorToApi(e: WebError): ApiError {
  return new ApiError(WEB_STATUS[e.code] ?? 502, e.code, e.message, { reason: e.reason });
}

export interface BrowseServiceDeps {
  store: BrowseStore;
  clock: Clock;
  fetcher: PageFetcher;
  robots: RobotsCheck;
  extractor: PageExtractor;
  renderer: PageRenderer;
  meter: BrowseMeter;
  probation: Probation;
}

/**
 * The API's browse record, plus what the page states about itself (fields beyond the API's
 * record, null when the page does not state them; docs/outbound-web.md "Page metadata"): byline,
 * published_at (ISO 8601 as stated), language (BCP 47), site_name.
 */
export interface BrowseRecord {
  browse_id: string; url: string; final_url: string; mode: string; http_status: number;
  content_type: string; title: string | null; text: string;
  byline: string | null; published_at: string | null; language: string | null; site_name: string | null;
  response_time_ms: number; fetched_at: string;
}

const recordOf = (r: BrowseRow): BrowseRecord => ({
  browse_id: r.browse_id, url: r.url, final_url: r.final_url, mode: r.mode, http_status: r.http_status,
  content_type: r.content_type, title: r.title, text: r.text,
  byline: r.byline ?? null, published_at: r.published_at ?? null, language: r.language ?? null, site_name: r.site_name ?? null,
  response_time_ms: r.response_time_ms, fetched_at: iso(r.created_at),
});

/** A stated field as stored: NULs dropped, capped, null when empty. */
const metaField = (v: string | null | undefined, max: number) => (v ? storableText(v).slice(0, max) || null : null);

/** Runs a step, turning the web layer's typed errors into API errors. */
async function web<T>(step: () => Promise<T> | T): Promise<T> {
  try {
    return await step();
  } catch (e) {
    if (isWebError(e)) throw webErrorToApi(e);
    throw e;
  }
}

export function createBrowseService(deps: BrowseServiceDeps) {
  const { store, clock } = deps;

  /**
   * robots.txt decides every URL svc fetches, not only the one asked for: each redirect hop
   * (static); each request of the rendered page, documents and sub-resources alike (dynamic), each
   * against its own site's robots.txt.
   */
  async function robotsGate(target: URL, asked?: string) {
    const decision = await deps.robots.decide(target);
    if (decision === 'allowed') return;
    const site = asked === undefined || asked === target.href ? 'this site' : target.host;
    const why = decision === 'unreachable'
      ? `robots.txt of ${site} could not be read (a server error or no answer), and until it can, svc-browse fetches nothing there (RFC 9309)`
      : `robots.txt of ${site} does not allow svc-browse to fetch ${site === 'this site' ? 'this URL' : target.href}`;
    // Same code (nothing is fetched either way); details.reason tells a client which it was.
    const reason = decision === 'unreachable' ? 'robots_unreachable' : 'robots_disallow';
    throw new WebError('BROWSE_ROBOTS_DISALLOW', reason, site === 'this site' ? why : `${why}; ${asked} leads to ${target.href}`);
  }

  async function fetchPage(mode: BrowseMode, url: string) {
    const check = (target: URL) => robotsGate(target, url);
    if (mode === 'dynamic') return deps.renderer.render(url, { checkFetch: check });
    const res = await deps.fetcher.fetch(url, { checkRedirect: check });
    const page = await deps.extractor.extract({ body: res.body, contentType: res.contentType, url: res.finalUrl });
    return { finalUrl: res.finalUrl, status: res.status, contentType: res.contentType, title: page.title, text: page.text, meta: page.meta };
  }

  return {
    async browse(caller: TrustInput, input: { url?: unknown; mode?: unknown }): Promise<{ record: BrowseRecord; usage: object }> {
      const started = performance.now();
      const mode = input.mode ?? 'static';
      if (mode !== 'static' && mode !== 'dynamic') {
        throw new ApiError(422, 'BROWSE_MODE_UNSUPPORTED', 'mode must be static or dynamic', { field: 'body.mode' });
      }
      const checked = await web(() => deps.fetcher.checkUrl(input.url));
      if (mode === 'dynamic') {
        if (await deps.probation.isProbationary(caller)) {
          throw new ApiError(403, 'BROWSE_DYNAMIC_TRUST_TIER',
            `Dynamic browse needs the standard trust tier: free-tier agents get it ${deps.probation.windowMs / 3_600_000} hours after registering, or at once by buying credit. Static browse works now.`,
            { available_at: iso(caller.createdAt + deps.probation.windowMs) });
        }
        if (!deps.renderer.configured) {
          throw new ApiError(503, 'BROWSE_PROVIDER_UNCONFIGURED', 'Dynamic browse is not available on this host (no Chromium: the operator installs one or sets SVC_CHROMIUM_PATH); use mode static');
        }
      }
      // The URL is parsed and checked once; the guarded client checks it again when it connects.
      await web(() => deps.fetcher.resolve(checked));
      const url = checked.href;
      // Refuse before fetching when the agent could not pay; the charge itself commits with the log row
      // (one transaction), so a failed fetch is never charged and a charged browse is always logged.
      // The credit check runs while robots.txt is read; a robots refusal still comes first.
      const canPay = deps.meter.check(caller.agentId, caller.tier, mode);
      canPay.catch(() => {});
      await web(() => robotsGate(checked));
      await canPay;
      const page = await web(() => fetchPage(mode, url));
      const row: BrowseRow = {
        browse_id: newId(), agent_id: caller.agentId, url, final_url: page.finalUrl, mode, http_status: page.status,
        content_type: page.contentType, title: storableText(page.title) || null, text: storableText(page.text),
        byline: metaField(page.meta?.byline, 300), published_at: metaField(page.meta?.published_at, 40),
        language: metaField(page.meta?.language, 40), site_name: metaField(page.meta?.site_name, 300),
        response_time_ms: Math.round(performance.now() - started), created_at: clock.now(),
      };
      const charge = await store.insertCharged(row, (trx) => deps.meter.chargeWithin(trx, caller.agentId, caller.tier, mode));
      return { record: recordOf(row), usage: await charge.committed() };
    },

    async get(agentId: string, browseId: string): Promise<BrowseRecord> {
      const row = await store.get(agentId, browseId);
      if (!row) throw new ApiError(404, 'BROWSE_NOT_FOUND', 'No browse record with this id');
      return recordOf(row);
    },

    /** The feed's view of browses: everything but the page text. */
    activitySource(): ActivitySource {
      return {
        kind: 'browse',
        async page(agentId, limit, before) {
          const rows = await store.page(agentId, limit, before);
          return rows.map((r) => ({
            kind: 'browse', id: r.browse_id, at: Number(r.created_at),
            data: {
              browse_id: r.browse_id, url: r.url, final_url: r.final_url, mode: r.mode, http_status: Number(r.http_status),
              content_type: r.content_type, title: r.title, response_time_ms: Number(r.response_time_ms),
            },
          }));
        },
      };
    },
  };
}

export type BrowseService = ReturnType<typeof createBrowseService>;
