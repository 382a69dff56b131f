import { group, int, optionalStr, settingProblem, str, type Setting } from './define';

/** Comma-separated TCP ports (1-65535). */
function portList(env: string, def: number[], doc: string): Setting<number[]> {
  return {
    env,
    doc,
    defaultText: def.join(','),
    read(raw) {
      if (raw === undefined || raw.trim() === '') return def;
      const ports = raw.split(',').map((s) => s.trim()).filter(Boolean);
      const out: number[] = [];
      for (const p of ports) {
        const n = Number(p);
        if (!/^\d+$/.test(p) || n < 1 || n > 65535) throw settingProblem(`${env} must list ports between 1 and 65535, got "${p}"`);
        out.push(n);
      }
      return out;
    },
  };
}

// The loopback allowance for tests is `SVC_OUTBOUND_ALLOW_LOOPBACK` in the core group.
export const webSettings = group('Search, browse and feedback', {
  browseMaxBytes: int('SVC_BROWSE_MAX_BYTES', 5 * 1024 * 1024, 'Largest page body (after decompression) that browse and the guarded outbound client accept; larger answers fail with BROWSE_RESPONSE_TOO_LARGE.', { min: 1024, max: 100 * 1024 * 1024 }),
  browseTimeoutMs: int('SVC_BROWSE_TIMEOUT_MS', 15_000, 'Total time for one outbound fetch (connect, redirects, headers and body) before BROWSE_PROVIDER_TIMEOUT; also the time one page\'s text extraction may take once its thread is ready (BROWSE_PROVIDER_ERROR, reason extraction_failed).', { min: 100, max: 120_000 }),
  outboundMaxRedirects: int('SVC_OUTBOUND_MAX_REDIRECTS', 5, 'Redirect hops the guarded client follows, each re-checked against the address policy.', { min: 0, max: 10 }),
  outboundAllowedPorts: portList('SVC_OUTBOUND_ALLOWED_PORTS', [80, 443, 8080, 8443], 'Destination ports user-supplied URLs may use.'),
  browseUserAgent: str('SVC_BROWSE_USER_AGENT', 'Mozilla/5.0 (compatible; svc-browse/1.0)', 'User-Agent header of outbound page requests. robots.txt rules are matched against the fixed token `svc-browse`.'),
  robotsCacheSeconds: int('SVC_ROBOTS_CACHE_SECONDS', 3600, 'How long a fetched robots.txt is cached per origin (RFC 9309 asks for at most 24 hours).', { min: 0, max: 86_400 }),
  robotsErrorCacheSeconds: int('SVC_ROBOTS_ERROR_CACHE_SECONDS', 60, 'How long an unreachable robots.txt (5xx, network failure: disallow all) is remembered before trying again.', { min: 0, max: 86_400 }),
  chromiumPath: optionalStr('SVC_CHROMIUM_PATH', 'Chromium executable for dynamic browse. Unset: /usr/bin/chromium when it exists. `none` disables dynamic mode (BROWSE_PROVIDER_UNCONFIGURED).'),
  renderTimeoutMs: int('SVC_RENDER_TIMEOUT_MS', 20_000, 'Total time for one dynamic render (navigation, sub-requests, settling) before BROWSE_PROVIDER_TIMEOUT.', { min: 500, max: 120_000 }),
  renderMaxTotalBytes: int('SVC_RENDER_MAX_TOTAL_BYTES', 20 * 1024 * 1024, 'Bytes one dynamic render may download across all its sub-requests; further sub-requests are aborted.', { min: 1024, max: 500 * 1024 * 1024 }),
  renderConcurrency: int('SVC_RENDER_CONCURRENCY', 2, 'Dynamic renders running at once per instance; more wait their turn.', { min: 1, max: 32 }),
});
