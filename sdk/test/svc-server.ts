/**
 * A real svc for the SDK and CLI tests: buildApp in process on a fresh SQLite directory, listening
 * on a loopback port, real clock. Clients talk to it through a recording pass-through proxy on
 * another loopback port (`url`), whose `requests` holds what went over the wire (method, URL,
 * headers, the first MiB of the body as latin1 text), so tests can prove what never leaves a client.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, unknown>;
  body: string;
}

export interface Svc {
  url: string;
  app: FastifyInstance;
  dataDir: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startSvc(env: Record<string, string> = {}): Promise<Svc> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-sdk-test-'));
  const config = loadConfig({ LOG_LEVEL: 'silent', SVC_DATA_DIR: dataDir, PORT: '0', SVC_ADMIN_KEY: 'test-admin-key', ...env });
  const { app } = await buildApp({ config, logger: false });
  const target = new URL(await app.listen({ host: '127.0.0.1', port: 0 }));
  const requests: RecordedRequest[] = [];
  const proxy: Server = createServer((req, res) => {
    const rec: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers }, body: '' };
    requests.push(rec);
    const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.on('data', (c: Buffer) => {
      if (rec.body.length < 1024 * 1024) rec.body += c.toString('latin1');
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return {
    url, app, dataDir, requests,
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
