/**
 * Shared set-up of the blob and parse tests: svc built directly (so a test reaches the app's own
 * database handle — PGlite has one connection) on the engine under test, with the blob store
 * picked per suite: the local filesystem or a real S3-compatible server (s3rver) on loopback.
 */
import { buildApp, type App } from '../src/app';
import { loadConfig, type Config } from '../src/config';
import { createBlobStore, type BlobStore } from '../src/infra/blobstore';
import { ManualClock } from '../src/lib/clock';
import { startFakeS3, type FakeS3 } from './fakes/s3rver';
import { createTestDatabase, type TestDatabase } from './helpers/engines';

export type StoreKind = 'fs' | 's3';

export interface BlobApp {
  built: App;
  config: Config;
  clock: ManualClock;
  store: StoreKind;
  request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, opts?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Record<string, any>; raw: string; rawBytes: Buffer }>;
  agent(tier?: string): Promise<{ token: string; id: string }>;
  upload(token: string, bytes: Buffer | string, contentType?: string): Promise<{ status: number; body: any }>;
  /** A second handle on the same bytes (to look at what is stored). */
  bytes(): Promise<BlobStore>;
  close(): Promise<void>;
}

let n = 0;

export async function s3Env(s3: FakeS3): Promise<Record<string, string>> {
  return {
    SVC_BLOB_STORE: 's3', SVC_S3_ENDPOINT: s3.endpoint, SVC_S3_BUCKET: s3.bucket, SVC_S3_REGION: s3.region,
    SVC_S3_ACCESS_KEY_ID: s3.accessKeyId, SVC_S3_SECRET_ACCESS_KEY: s3.secretAccessKey, SVC_S3_FORCE_PATH_STYLE: 'true',
  };
}

export async function startBlobApp(store: StoreKind, env: Record<string, string> = {}, shared?: { db: TestDatabase; clock?: ManualClock }): Promise<BlobApp> {
  const tdb = shared?.db ?? (await createTestDatabase());
  const s3 = store === 's3' ? await startFakeS3() : undefined;
  const clock = shared?.clock ?? new ManualClock();
  const config = loadConfig({
    LOG_LEVEL: 'silent', PORT: '0', SVC_EMBEDDINGS: 'none', SVC_QUEUE_POLL_INTERVAL_MS: '50', ...tdb.env, ...(s3 ? await s3Env(s3) : {}), ...env,
  });
  const built = await buildApp({ config, clock, logger: false });
  const opened: BlobStore[] = [];
  const request: BlobApp['request'] = async (method, url, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    let payload: string | Buffer | undefined;
    if (o.body !== undefined) {
      payload = typeof o.body === 'string' || Buffer.isBuffer(o.body) ? o.body : JSON.stringify(o.body);
      if (!headers['content-type'] && !Buffer.isBuffer(o.body)) headers['content-type'] = 'application/json';
    }
    const res = await built.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
    let body: any = res.body;
    try { body = JSON.parse(res.body); } catch { /* not JSON */ }
    return { status: res.statusCode, body, headers: res.headers as Record<string, any>, raw: res.body, rawBytes: res.rawPayload };
  };
  return {
    built, config, clock, store, request,
    async agent(tier = 'free') {
      const res = await request('POST', '/v1/register', { body: { agent_name: `blob-${process.pid}-${++n}`, owner_identifier: `owner-${n}`, agree_to_terms: true } });
      if (res.status !== 201) throw new Error(`register failed ${res.status}`);
      const id = res.body.agent_id as string;
      if (tier !== 'free') await built.database.db.updateTable('agents').set({ tier }).where('agent_id', '=', id).execute();
      return { token: res.body.api_key as string, id };
    },
    upload: (token, bytes, contentType = 'application/octet-stream') =>
      request('PUT', '/v1/blobs', { token, body: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes), headers: { 'content-type': contentType } }),
    async bytes() {
      const s = await createBlobStore(config);
      opened.push(s);
      return s;
    },
    async close() {
      await built.app.close();
      for (const s of opened) await s.close();
      await s3?.close();
      if (!shared) await tdb.close();
    },
  };
}

/** Polls `fn` until it returns a truthy value (real time), or fails after `ms`. */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, ms = 10_000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
