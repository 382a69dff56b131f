/**
 * A loopback web server for the outbound web tests: pages, robots.txt, redirects, slow and
 * oversized responses. Routes are matched on the exact path (query ignored); anything else is a
 * 404. Every request is recorded in `hits` (path with query), so a test can prove a request that
 * should have been refused never arrived.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface FakeWebServer {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:40123 */
  url: string;
  host: string;
  port: number;
  hits: string[];
  route(path: string, handler: RouteHandler): void;
  close(): Promise<void>;
}

export async function startWebServer(opts: { host?: string; routes?: Record<string, RouteHandler> } = {}): Promise<FakeWebServer> {
  const host = opts.host ?? '127.0.0.1';
  const routes = new Map<string, RouteHandler>(Object.entries(opts.routes ?? {}));
  const hits: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '/');
    const path = (req.url ?? '/').split('?')[0];
    const handler = routes.get(path);
    if (!handler) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    Promise.resolve(handler(req, res)).catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    host,
    port,
    hits,
    route: (path, handler) => void routes.set(path, handler),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export function respond(status: number, body: string | Buffer, headers: Record<string, string> = {}): RouteHandler {
  return (_req, res) => {
    res.writeHead(status, { 'content-length': String(Buffer.byteLength(body)), ...headers }).end(body);
  };
}

export const html = (body: string, headers: Record<string, string> = {}) => respond(200, body, { 'content-type': 'text/html; charset=utf-8', ...headers });
export const text = (body: string, status = 200) => respond(status, body, { 'content-type': 'text/plain; charset=utf-8' });
export const redirect = (location: string, status = 302) => respond(status, '', { location });

/** The same HTML, gzip-compressed on the wire. */
export const gzippedHtml = (body: string) => respond(200, gzipSync(body), { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' });

/** Waits before handing over to `then` (slow headers). */
export function slow(delayMs: number, then: RouteHandler): RouteHandler {
  return (req, res) => {
    const t = setTimeout(() => void then(req, res), delayMs);
    res.on('close', () => clearTimeout(t));
  };
}

/** Sends headers at once, then a chunk every `intervalMs`, forever (slow body). */
export function trickle(intervalMs: number, chunk = 'x'): RouteHandler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write(chunk);
    const t = setInterval(() => res.write(chunk), intervalMs);
    res.on('close', () => clearInterval(t));
  };
}

/**
 * A body of `bytes` bytes streamed in 64 KiB chunks; `declareLength` sends a Content-Length
 * (so the client can refuse early), otherwise it is chunked. `sent()` tells how much went out.
 */
export function oversized(bytes: number, declareLength: boolean): RouteHandler & { sent(): number } {
  let sent = 0;
  const handler: RouteHandler = (_req, res) => {
    const headers: Record<string, string> = { 'content-type': 'text/html' };
    if (declareLength) headers['content-length'] = String(bytes);
    res.writeHead(200, headers);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let left = bytes;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        sent += n;
        if (!res.write(chunk.subarray(0, n))) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('error', () => {});
    pump();
  };
  return Object.assign(handler, { sent: () => sent });
}
