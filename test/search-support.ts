/**
 * Shared set-up of the search, browse, feedback and usage tests: svc built directly (not through
 * the harness) so a test can reach its database handle to move an agent to a tier or its clock
 * past a window. PGlite has one connection: tests use the app's own handle, never a second one.
 */
import { buildApp, type App } from '../src/app';
import { loadConfig, type Config } from '../src/config';
import { ManualClock } from '../src/lib/clock';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

export interface WebApp {
  built: App;
  /** Base URL when started with `listen: true`. */
  url: string;
  config: Config;
  clock: ManualClock;
  request(method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE', url: string, opts?: { token?: string; body?: unknown }): Promise<{ status: number; body: any; headers: Record<string, any> }>;
  agent(tier?: string, extra?: { createdAgoMs?: number }): Promise<{ token: string; id: string }>;
  close(): Promise<void>;
}

let n = 0;

export async function startWebApp(env: Record<string, string> = {}, opts: { listen?: boolean } = {}): Promise<WebApp> {
  const tdb: TestDatabase = await createTestDatabase();
  const clock = new ManualClock();
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: '0', SVC_EMBEDDINGS: 'none', ...tdb.env, ...env });
  const built = await buildApp({ config, clock, logger: false });
  const url = opts.listen ? await built.app.listen({ host: '127.0.0.1', port: 0 }) : '';
  const request: WebApp['request'] = async (method, url, o = {}) => {
    const headers: Record<string, string> = {};
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await built.app.inject({ method, url, headers, ...(o.body !== undefined ? { payload: typeof o.body === 'string' ? o.body : JSON.stringify(o.body) } : {}) });
    let body: any = res.body;
    try { body = JSON.parse(res.body); } catch { /* not JSON */ }
    return { status: res.statusCode, body, headers: res.headers as Record<string, any> };
  };
  return {
    built, url, config, clock, request,
    async agent(tier = 'free', extra = {}) {
      const res = await request('POST', '/v1/register', { body: { agent_name: `web-${process.pid}-${++n}`, owner_identifier: `owner-${n}`, agree_to_terms: true } });
      if (res.status !== 201) throw new Error(`register failed ${res.status}`);
      const id = res.body.agent_id as string;
      const patch: Record<string, unknown> = {};
      if (tier !== 'free') patch.tier = tier;
      if (extra.createdAgoMs !== undefined) patch.created_at = clock.now() - extra.createdAgoMs;
      if (Object.keys(patch).length) await built.database.db.updateTable('agents').set(patch).where('agent_id', '=', id).execute();
      return { token: res.body.api_key as string, id };
    },
    async close() {
      await built.app.close();
      await tdb.close();
    },
  };
}

/** Sets an agent's metering count for a pool on the clock's UTC day (fills a quota without thousands of calls). */
export async function setDailyCount(w: WebApp, agentId: string, pool: string, count: number, at = w.clock.now()): Promise<void> {
  const day = new Date(at).toISOString().slice(0, 10);
  await w.built.database.db.insertInto('metering_daily').values({ agent_id: agentId, pool, day, count })
    .onConflict((oc) => oc.columns(['agent_id', 'pool', 'day']).doUpdateSet({ count })).execute();
}
