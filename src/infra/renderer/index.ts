/**
 * Dynamic renderer wiring: the shared Chromium host plus the renderer, from settings.
 * Without a Chromium (SVC_CHROMIUM_PATH=none, or no /usr/bin/chromium) `configured` is false and
 * render() fails with BROWSE_PROVIDER_UNCONFIGURED.
 */
import type { Config } from '../../config';
import type { Extracted } from '../web/extract';
import type { ExtractInput } from '../web/extractor';
import type { GuardedClient } from '../web/guarded-client';
import { createBrowserHost, resolveChromiumPath } from './chromium';
import { createRenderer, type Renderer } from './renderer';

export { createBrowserHost, resolveChromiumPath, DEFAULT_CHROMIUM_PATH, type BrowserHost } from './chromium';
export { createRenderer, type Renderer, type RenderResult, type RendererOptions } from './renderer';

export function createRendererFromConfig(
  config: Pick<Config, 'web'>,
  deps: { client: GuardedClient; extract: (input: ExtractInput) => Promise<Extracted> },
): Renderer {
  const w = config.web;
  return createRenderer({
    host: createBrowserHost({ executablePath: resolveChromiumPath(w.chromiumPath) }),
    client: deps.client,
    extract: deps.extract,
    timeoutMs: w.renderTimeoutMs,
    maxBytes: w.browseMaxBytes,
    maxTotalBytes: w.renderMaxTotalBytes,
    concurrency: w.renderConcurrency,
    maxRedirects: w.outboundMaxRedirects,
    userAgent: w.browseUserAgent,
  });
}
