/**
 * One shared headless Chromium process (the Debian `chromium` package) driven by playwright-core.
 * Launched on first use, relaunched on the next use after it dies, closed on shutdown.
 *
 * Chromium never talks to the network itself: every request of a page is fulfilled by the
 * renderer from the guarded client (renderer.ts). As a second wall, the browser is started with
 * a proxy that is a local socket which closes every connection at once, no proxy bypass for
 * loopback, and a host resolver that resolves nothing; so a request that somehow skipped the
 * route handler (a redirect Chromium followed on its own, a WebSocket, a preconnect) fails
 * instead of reaching an internal address. `escapes` counts such attempts (tests assert zero).
 */
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Browser } from 'playwright-core';
import { WebError } from '../web/errors';

export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/** The executable to use: the setting, else /usr/bin/chromium if present; `none` turns rendering off. */
export function resolveChromiumPath(setting: string | undefined): string | undefined {
  if (setting === 'none') return undefined;
  if (setting) return setting;
  return existsSync(DEFAULT_CHROMIUM_PATH) ? DEFAULT_CHROMIUM_PATH : undefined;
}

export interface BrowserHost {
  readonly configured: boolean;
  /** Throws BROWSE_PROVIDER_UNCONFIGURED when there is no Chromium to launch. */
  ensureConfigured(): void;
  /** The running browser, launching it if needed. */
  browser(): Promise<Browser>;
  /** Connections that reached the dead-end proxy (requests that bypassed the route handler). */
  escapes(): number;
  close(): Promise<void>;
}

const LAUNCH_TIMEOUT_MS = 30_000;

function launchArgs(proxyPort: number): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
    '--disable-extensions',
    '--mute-audio',
    '--dns-prefetch-disable',
    `--proxy-server=http://127.0.0.1:${proxyPort}`,
    '--proxy-bypass-list=<-loopback>',
    '--host-resolver-rules=MAP * ~NOTFOUND',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
  ];
}

export function createBrowserHost(opts: { executablePath: string | undefined }): BrowserHost {
  let launching: Promise<Browser> | null = null;
  let current: Browser | null = null;
  let proxy: Server | null = null;
  let escapes = 0;
  let closed = false;

  async function deadEndProxy(): Promise<number> {
    if (!proxy) {
      const server = createServer((socket) => {
        escapes++;
        socket.destroy();
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      server.unref();
      proxy = server;
    }
    return (proxy.address() as AddressInfo).port;
  }

  async function launch(executablePath: string): Promise<Browser> {
    const port = await deadEndProxy();
    // Loaded on first launch: playwright-core is a large module (~90 MiB of resident memory and a
    // tenth of a second at start-up) that a host which never renders a page does not need.
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath,
      headless: true,
      chromiumSandbox: false,
      args: launchArgs(port),
      timeout: LAUNCH_TIMEOUT_MS,
      // We close the browser ourselves on shutdown; Playwright's signal handlers would race us.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    current = browser;
    browser.on('disconnected', () => {
      // Crashed or killed: forget it, so the next render launches a fresh one.
      if (current === browser) {
        current = null;
        launching = null;
      }
    });
    return browser;
  }

  function ensureConfigured(): void {
    if (!opts.executablePath) {
      throw new WebError('BROWSE_PROVIDER_UNCONFIGURED', 'renderer_unconfigured', 'Dynamic browsing is not configured on this server (no Chromium; see SVC_CHROMIUM_PATH).');
    }
    if (!existsSync(opts.executablePath)) {
      throw new WebError('BROWSE_PROVIDER_UNCONFIGURED', 'renderer_unconfigured', `Chromium not found at ${opts.executablePath}.`);
    }
  }

  return {
    configured: !!opts.executablePath,
    escapes: () => escapes,
    ensureConfigured,
    async browser() {
      ensureConfigured();
      const executablePath = opts.executablePath as string;
      if (closed) throw new WebError('BROWSE_PROVIDER_ERROR', 'renderer_failure', 'The renderer is shut down.');
      if (!launching) {
        const p = launch(executablePath);
        launching = p;
        p.catch(() => {
          if (launching === p) launching = null;
        });
      }
      try {
        return await launching;
      } catch (err) {
        throw new WebError('BROWSE_PROVIDER_ERROR', 'renderer_failure', `Chromium failed to start: ${(err as Error).message.split('\n')[0]}`);
      }
    },
    async close() {
      closed = true;
      const p = launching;
      launching = null;
      if (p) await p.then((b) => b.close()).catch(() => {});
      const server = proxy;
      proxy = null;
      if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
