import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../src/app';
import type { DatabaseHandle } from '../../src/infra/db/database';
import { loadConfig, type Config } from '../../src/config';
import { ManualClock } from '../../src/lib/clock';
import { generateEd25519 } from '../../src/lib/ed25519';
import { createTestDatabase, type TestDatabase } from './engines';

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  clock: ManualClock;
  db: TestDatabase;
  /** The app's own database handle (reads and writes behind the service's back). */
  database: DatabaseHandle;
  /** The base URL when started with `listen: true`. */
  url: string;
  request(method: InjectOptions['method'], path: string, opts?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Record<string, any>; raw: string }>;
  registerAgent(overrides?: Record<string, unknown>): Promise<RegisteredAgent>;
  close(): Promise<void>;
}

export interface RegisteredAgent {
  apiKey: string;
  agentId: string;
  publicKeyPem: string;
  privateKeyPem: string;
  body: any;
}

let counter = 0;

/**
 * Starts svc on a fresh database of the engine under test, with a manual clock and no logs.
 * `env` overrides settings; `listen` binds a real loopback socket.
 */
export async function startTestApp(opts: { env?: Record<string, string>; listen?: boolean; db?: TestDatabase } = {}): Promise<TestApp> {
  const db = opts.db ?? (await createTestDatabase());
  const clock = new ManualClock();
  const config = loadConfig({ LOG_LEVEL: 'silent', SVC_ADMIN_KEY: 'test-admin-key', PORT: '0', ...db.env, ...opts.env });
  const { app, database } = await buildApp({ config, clock, logger: false });
  let url = '';
  if (opts.listen) url = await app.listen({ host: '127.0.0.1', port: 0 });

  const request: TestApp['request'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    const res = await app.inject({
      method, url: path, headers,
      ...(o.body !== undefined ? { payload: typeof o.body === 'string' || Buffer.isBuffer(o.body) ? o.body : JSON.stringify(o.body) } : {}),
      ...(o.body !== undefined && !headers['content-type'] && !Buffer.isBuffer(o.body) ? { headers: { ...headers, 'content-type': 'application/json' } } : {}),
    });
    let body: any = res.body;
    try {
      body = JSON.parse(res.body);
    } catch {
      /* not JSON */
    }
    return { status: res.statusCode, body, headers: res.headers as Record<string, any>, raw: res.body };
  };

  return {
    app, config, clock, db, database, url, request,
    async registerAgent(overrides = {}) {
      const keys = generateEd25519();
      const res = await request('POST', '/v1/register', {
        body: {
          agent_name: `agent-${process.pid}-${++counter}`,
          owner_identifier: `owner-${counter}@example.test`,
          agree_to_terms: true,
          passport_public_key: keys.publicKeyPem,
          ...overrides,
        },
      });
      if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${res.raw}`);
      return { apiKey: res.body.api_key, agentId: res.body.agent_id, publicKeyPem: keys.publicKeyPem, privateKeyPem: keys.privateKeyPem, body: res.body };
    },
    async close() {
      await app.close();
      if (!opts.db) await db.close();
    },
  };
}
