/**
 * Dynamic page rendering for browse mode `dynamic`: the page runs in headless Chromium with its
 * JavaScript, and every request it makes (document, scripts, XHR/fetch, images, frames) is
 * intercepted (context.route('**\/*')) and fetched by the guarded client instead, so the address
 * policy, connect-time checks, size and time limits apply to each one. A request the policy
 * refuses is aborted and listed in `blocked`; the page goes on without it.
 *
 * - Main-document redirects are followed by re-navigating (max `maxRedirects`, each hop checked),
 *   so the page's URL and relative links are right; sub-resources follow redirects in the client.
 * - A fresh browser context per render: no cookies, storage or cache survive it; downloads,
 *   service workers, WebSockets, pop-ups and dialogs are refused.
 * - Limits: `timeoutMs` for the whole render (queueing, navigation, settling, extraction);
 *   `maxBytes` per response and for the final HTML; `maxTotalBytes` across all of the page's
 *   requests, drawn as their bodies arrive (a byte budget shared by answers read at the same time).
 * - Sub-resources' redirect hops go through `checkFetch` too (robots.txt of each hop's site), and a
 *   CORS-mode read (fetch, XHR, EventSource, or any request with an Origin) is judged by the
 *   origin of the answer it ends at: a same-origin fetch() the site redirects elsewhere needs that
 *   site's Access-Control-Allow-Origin, as in a browser.
 * - At most `concurrency` renders at once; the rest wait (inside their time budget).
 * - The rendered HTML goes through the same extraction as static browse.
 */
import type { BrowserContext, Page, Request, Route } from 'playwright-core';
import { createByteBudget } from '../web/body';
import { classifyBody } from '../web/content';
import { WebError, isWebError } from '../web/errors';
import type { Extracted } from '../web/extract';
import type { ExtractInput } from '../web/extractor';
import type { GuardedClient } from '../web/guarded-client';
import type { BrowserHost } from './chromium';

export interface RenderResult {
  finalUrl: string;
  status: number;
  contentType: string;
  title: string;
  text: string;
  /** What the page states about itself (byline, date, language, site name). */
  meta: Extracted['meta'];
  html: string;
  /** Sub-request URLs refused by the address policy or the byte budget (first 50). */
  blocked: string[];
}

export interface Renderer {
  readonly configured: boolean;
  render(url: string, opts?: RenderOptions): Promise<RenderResult>;
  close(): Promise<void>;
}

export interface RenderOptions {
  timeoutMs?: number;
  /**
   * Called before every request of the page is fetched (robots.txt: svc-browse fetches each of them).
   * A throw (a WebError) refuses it: for a main-frame document (the first, each redirect hop, a
   * navigation a script starts) the render fails with that error if the page was not loaded yet, and
   * a later navigation is cancelled (the loaded page stays); a sub-request is blocked (listed).
   */
  checkFetch?: (url: URL, mainFrame: boolean) => Promise<void> | void;
}

/** Methods a page may use: reads only. svc is no relay for a page's writes to other sites. */
const READ_METHODS = new Set(['GET', 'HEAD']);

/** Requests a browser makes in CORS mode even when it sends no Origin (a same-origin GET). */
const CORS_MODE_TYPES = new Set(['fetch', 'xhr', 'eventsource']);

/**
 * The CORS rule a browser applies to a cross-origin read (fetch, XHR, EventSource, a crossorigin
 * element), which answering from the route would skip: the answer is handed to the page only when
 * the site it came from (after any redirect) allows the page's origin (or any). A request with an
 * Origin header is such a read; so is a fetch/XHR/EventSource without one (same-origin: its origin
 * is its own URL's), which a redirect to another site makes cross-origin.
 */
function corsRefuses(request: { origin?: string; resourceType: string; url: string }, answeredBy: string, headers: Record<string, string>): boolean {
  if (request.origin === undefined && !CORS_MODE_TYPES.has(request.resourceType)) return false;
  const origin = request.origin ?? new URL(request.url).origin;
  if (origin === new URL(answeredBy).origin) return false;
  const allowed = headers['access-control-allow-origin'];
  return allowed !== '*' && allowed !== origin;
}

export interface RendererOptions {
  host: BrowserHost;
  client: GuardedClient;
  extract: (input: ExtractInput) => Promise<Extracted>;
  timeoutMs: number;
  maxBytes: number;
  maxTotalBytes: number;
  concurrency: number;
  maxRedirects?: number;
  userAgent?: string;
  /** After `load`, how long to wait for the network to go quiet (scripts fetching content). */
  settleMs?: number;
}

// Request headers Chromium sets that we pass on; cookies and auth never exist in a fresh context.
const FORWARDED_REQUEST_HEADERS = ['accept', 'accept-language', 'content-type', 'referer', 'origin', 'x-requested-with'];
const DROPPED_RESPONSE_HEADERS = new Set([
  'content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive', 'set-cookie', 'alt-svc', 'strict-transport-security',
]);
const MAX_BLOCKED_LISTED = 50;

interface Attempt {
  redirectTo: string | null;
  mainError: WebError | null;
  main: { status: number; contentType: string; body: Buffer } | null;
}

function semaphore(limit: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return {
    async acquire(): Promise<() => void> {
      if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
      active++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        active--;
        waiting.shift()?.();
      };
    },
  };
}

const timeoutError = (ms: number) => new WebError('BROWSE_PROVIDER_TIMEOUT', 'timeout', `Rendering did not finish within ${ms} ms.`);

export function createRenderer(opts: RendererOptions): Renderer {
  const slots = semaphore(opts.concurrency);
  const maxRedirects = opts.maxRedirects ?? 5;
  const settleMs = opts.settleMs ?? 1_500;

  async function renderIn(page: Page, ctx: BrowserContext, start: URL, deadline: number, totalMs: number, o: RenderOptions): Promise<RenderResult> {
    const remaining = () => deadline - performance.now();
    const budget = createByteBudget(opts.maxTotalBytes);
    const blocked: string[] = [];
    let attempt: Attempt = { redirectTo: null, mainError: null, main: null };
    // Once the page has loaded, a navigation of the main frame (a script setting location, a form) is
    // the page's own doing: one svc refuses is answered 204, which a browser takes as "stay on the
    // current page". Aborting it instead would load Chromium's error page in its place.
    let loaded = false;
    const noteBlocked = (url: string) => {
      if (blocked.length < MAX_BLOCKED_LISTED) blocked.push(url);
    };

    await ctx.route('**/*', async (route: Route, request: Request) => {
      const url = request.url();
      let isMain = false;
      try {
        isMain = request.isNavigationRequest() && request.frame() === page.mainFrame();
      } catch {
        // Requests without a frame (workers) are sub-requests.
      }
      const mine = attempt;
      const abort = (code: 'blockedbyclient' | 'failed' | 'timedout' | 'aborted') =>
        (isMain && loaded ? route.fulfill({ status: 204, body: '' }) : route.abort(code)).catch(() => {});
      if (!/^https?:/i.test(url)) return abort('blockedbyclient');
      const timeLeft = remaining();
      if (timeLeft <= 0) return abort('timedout');
      if (budget.left <= 0) {
        noteBlocked(url);
        return abort('blockedbyclient');
      }
      // A form a script submits after load (a POST navigation) is no read either: cancelled, the loaded page stays.
      if (!READ_METHODS.has(request.method())) {
        noteBlocked(url);
        return abort('blockedbyclient');
      }
      const headers: Record<string, string> = {};
      const sent = request.headers();
      for (const h of FORWARDED_REQUEST_HEADERS) if (sent[h]) headers[h] = sent[h];
      let res;
      try {
        const check = o.checkFetch;
        if (check) await check(new URL(url), isMain);
        res = await opts.client.fetch(url, {
          method: request.method(),
          headers,
          body: request.postDataBuffer() ?? undefined,
          maxBytes: opts.maxBytes,
          budget,
          timeoutMs: timeLeft,
          followRedirects: !isMain,
          // A sub-resource's hops are followed in the client: each is fetched by svc-browse too.
          checkRedirect: check && !isMain ? (next) => check(next, false) : undefined,
        });
      } catch (err) {
        const e = isWebError(err) ? err : new WebError('BROWSE_PROVIDER_ERROR', 'upstream_failure', String(err));
        if (isMain) mine.mainError = e;
        else if (e.code === 'BROWSE_URL_BLOCKED' || e.code === 'BROWSE_ROBOTS_DISALLOW' || e.code === 'BROWSE_RESPONSE_TOO_LARGE') noteBlocked(url);
        return abort(e.code === 'BROWSE_URL_BLOCKED' || e.code === 'BROWSE_ROBOTS_DISALLOW' ? 'blockedbyclient' : e.code === 'BROWSE_PROVIDER_TIMEOUT' ? 'timedout' : 'failed');
      }
      if (!isMain && corsRefuses({ origin: sent.origin, resourceType: request.resourceType(), url }, res.finalUrl, res.headers)) return abort('failed');
      if (isMain) {
        if (res.status >= 300 && res.status < 400 && res.headers.location) {
          try {
            mine.redirectTo = opts.client.checkUrl(new URL(res.headers.location, url).href).href;
          } catch (err) {
            mine.mainError = new WebError('BROWSE_URL_BLOCKED', 'redirect_blocked', `Redirect refused: ${(err as Error).message}`);
          }
          return abort('aborted');
        }
        try {
          classifyBody(res.contentType, res.body);
        } catch (err) {
          mine.mainError = err as WebError;
          return abort('blockedbyclient');
        }
        mine.main = { status: res.status, contentType: res.contentType, body: res.body };
      }
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (!DROPPED_RESPONSE_HEADERS.has(k)) out[k] = v;
      await route.fulfill({ status: res.status, headers: out, body: res.body }).catch(() => {});
    });

    let target = start.href;
    for (let hop = 0; ; hop++) {
      attempt = { redirectTo: null, mainError: null, main: null };
      const current = attempt;
      try {
        await page.goto(target, { waitUntil: 'load', timeout: Math.max(1, remaining()) });
        loaded = true;
        break;
      } catch (err) {
        if (current.mainError) throw current.mainError;
        if (current.redirectTo) {
          if (hop >= maxRedirects) throw new WebError('BROWSE_PROVIDER_ERROR', 'too_many_redirects', `More than ${maxRedirects} redirects.`);
          target = current.redirectTo;
          continue;
        }
        if (remaining() <= 0 || /Timeout/i.test((err as Error).name + (err as Error).message)) throw timeoutError(totalMs);
        throw new WebError('BROWSE_PROVIDER_ERROR', 'renderer_failure', `Navigation failed: ${(err as Error).message.split('\n')[0]}`);
      }
    }
    const main = attempt.main;
    if (!main) throw new WebError('BROWSE_PROVIDER_ERROR', 'renderer_failure', 'The page produced no document.');
    // Let scripts that fetch content after `load` finish, within the budget.
    await page.waitForLoadState('networkidle', { timeout: Math.max(1, Math.min(settleMs, remaining())) }).catch(() => {});

    const finalUrl = page.url();
    // Never an error page of the browser's own (chrome-error://) as if it were the site's.
    if (!/^https?:/i.test(finalUrl)) {
      throw new WebError('BROWSE_PROVIDER_ERROR', 'renderer_failure', 'The page navigated away to a document that could not be loaded.');
    }
    const html = await page.content();
    if (Buffer.byteLength(html) > opts.maxBytes) {
      throw new WebError('BROWSE_RESPONSE_TOO_LARGE', 'too_large', `Rendered page exceeds ${opts.maxBytes} bytes.`);
    }
    const pageTitle = (await page.title()).trim();
    const kind = classifyBody(main.contentType, main.body);
    // A plain-text document is shown by Chromium wrapped in <pre>; its own bytes are the text.
    const extracted =
      kind === 'html'
        ? await opts.extract({ body: Buffer.from(html, 'utf8'), contentType: 'text/html; charset=utf-8', url: finalUrl })
        : await opts.extract({ body: main.body, contentType: main.contentType, url: finalUrl });
    return {
      finalUrl,
      status: main.status,
      contentType: main.contentType,
      title: extracted.title || pageTitle,
      text: extracted.text,
      meta: extracted.meta,
      html,
      blocked,
    };
  }

  return {
    configured: opts.host.configured,
    async render(input, o = {}) {
      opts.client.checkUrl(input); // INVALID_URL / BROWSE_URL_BLOCKED before anything else
      opts.host.ensureConfigured();
      const totalMs = o.timeoutMs ?? opts.timeoutMs;
      const deadline = performance.now() + totalMs;
      let ctx: BrowserContext | null = null;
      let release: (() => void) | null = null;
      let abandoned = false;
      const stillWanted = () => {
        if (abandoned) throw timeoutError(totalMs);
      };
      const closeCtx = async () => {
        const c = ctx as BrowserContext | null;
        if (c) await c.close().catch(() => {});
      };
      const work = (async () => {
        const start = await opts.client.validatePublicUrl(input);
        release = await slots.acquire();
        stillWanted();
        const browser = await opts.host.browser();
        stillWanted();
        ctx = await browser.newContext({
          acceptDownloads: false,
          serviceWorkers: 'block',
          userAgent: opts.userAgent,
          viewport: { width: 1280, height: 900 },
          locale: 'en-US',
        });
        stillWanted();
        await ctx.routeWebSocket(/.*/, (ws) => ws.close());
        const page = await ctx.newPage();
        page.on('dialog', (d) => void d.dismiss().catch(() => {}));
        ctx.on('page', (p) => {
          if (p !== page) void p.close().catch(() => {}); // no pop-ups
        });
        return renderIn(page, ctx, start, deadline, totalMs, o);
      })();
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([
          work,
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(timeoutError(totalMs)), totalMs);
          }),
        ]);
      } catch (err) {
        if (isWebError(err)) throw err;
        throw new WebError('BROWSE_PROVIDER_ERROR', 'renderer_failure', `Rendering failed: ${(err as Error).message.split('\n')[0]}`);
      } finally {
        clearTimeout(timer);
        abandoned = true;
        await closeCtx(); // makes a still-running render fail fast
        // The slot is freed only when the work has really stopped, so the limit holds.
        void work.catch(() => {}).finally(async () => {
          await closeCtx();
          (release as (() => void) | null)?.();
        });
      }
    },
    close: () => opts.host.close(),
  };
}
