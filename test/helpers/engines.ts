import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * The database behind one test app. SVC_TEST_ENGINE picks the engine (vitest projects set it):
 *   sqlite   — a fresh SQLite file in a temp directory.
 *   postgres — SVC_TEST_PG=postgres://... : a fresh database on that server (CI uses a local one);
 *              otherwise PGlite (real Postgres compiled to WASM, with pgvector) served over the wire
 *              protocol by @electric-sql/pglite-socket on a loopback port, so the pg driver is used as-is.
 */
export interface TestDatabase {
  engine: 'sqlite' | 'postgres';
  env: Record<string, string>;
  dataDir: string;
  close(): Promise<void>;
}

export function testEngine(): 'sqlite' | 'postgres' {
  return process.env.SVC_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
}

/** Settings every test app takes from the test run: the response schema checks (vitest.config.ts sets them). */
const fromRun = (): Record<string, string> => (process.env.SVC_VALIDATE_RESPONSES ? { SVC_VALIDATE_RESPONSES: process.env.SVC_VALIDATE_RESPONSES } : {});

export async function createTestDatabase(): Promise<TestDatabase> {
  const db = await createEngineDatabase();
  return { ...db, env: { ...fromRun(), ...db.env } };
}

async function createEngineDatabase(): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  const removeDir = () => rmSync(dataDir, { recursive: true, force: true });
  if (testEngine() === 'sqlite') {
    return { engine: 'sqlite', env: { SVC_DATA_DIR: dataDir }, dataDir, close: async () => removeDir() };
  }
  const serverUrl = process.env.SVC_TEST_PG;
  if (serverUrl) {
    const name = `svc_test_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return {
      engine: 'postgres',
      env: { SVC_DATA_DIR: dataDir, DATABASE_URL: url.toString() },
      dataDir,
      async close() {
        const c = new pg.Client({ connectionString: serverUrl });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
        removeDir();
      },
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const { vector } = await import('@electric-sql/pglite-pgvector');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const db = await PGlite.create({ extensions: { vector } });
  // One connection: PGlite is a single session, and the socket server's multiplexer interleaves
  // statements of concurrent connections, which would mix their transactions.
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 1 });
  await server.start();
  const port = Number(server.getServerConn().split(':').pop());
  return {
    engine: 'postgres',
    env: { SVC_DATA_DIR: dataDir, DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, DATABASE_POOL_MAX: '1' },
    dataDir,
    async close() {
      await server.stop();
      await db.close();
      removeDir();
    },
  };
}
