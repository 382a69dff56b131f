/**
 * Builds the trust log, epochs and the operator views for app.ts. Other trust modules append to
 * `log`, and register their projection's replay (parity), trace section and adoption counts here
 * before `routes` is registered.
 */
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import { createTrustAdmin, type AdoptionSource, type TraceSection } from './admin';
import { createEpochs } from './epochs';
import { createTrustLevels } from './levels';
import { epochsReplayer } from './epochs-replay';
import { createTrustLog } from './log';
import { createTrustLogStore } from './log-store';
import { createParity, type ReplayerFactory, type SnapshotDb } from './parity';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { trustRoutes } from './routes';

/** The default origin: the base URL's host and path, then /trust-log. */
export function defaultOrigin(baseUrl: string): string {
  const u = new URL(baseUrl);
  return `${u.host}${u.pathname.replace(/\/+$/, '')}/trust-log`;
}

/**
 * One consistent read view for the parity check, without holding writers back: a REPEATABLE READ,
 * read-only transaction on PostgreSQL; on SQLite a read transaction on a second, read-only
 * connection to the file (WAL gives it a snapshot while the service's own connection goes on writing).
 */
function snapshotOf(database: DatabaseHandle): <T>(fn: (db: SnapshotDb) => Promise<T>) => Promise<T> {
  if (database.engine === 'postgres') {
    return (fn) => database.db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(fn);
  }
  return async (fn) => {
    const file = (database.sqlite as SQLite.Database).name;
    const reader = new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(file, { readonly: true, fileMustExist: true }) }) });
    try {
      return await reader.transaction().execute(fn);
    } finally {
      await reader.destroy();
    }
  };
}

export async function createTrustModule(deps: { config: Config; database: DatabaseHandle; clock: Clock; agentExists: (id: string) => Promise<boolean> }) {
  const { config, database, clock } = deps;
  const store = createTrustLogStore(database.db, database.engine);
  const log = await createTrustLog({
    store, clock, origin: config.trust.logOrigin ?? defaultOrigin(config.core.baseUrl),
    privateKeyPem: config.trust.logPrivateKey, checkpointIntervalMs: config.trust.checkpointIntervalMs, commits: database.commits,
  });
  const epochs = createEpochs(database.db, log);
  const projections: ReplayerFactory[] = [epochsReplayer()];
  const sections: TraceSection[] = [];
  const adoption: AdoptionSource[] = [];
  const parity = createParity({ db: database.db, store, clock, projections, snapshot: snapshotOf(database) });
  const admin = createTrustAdmin({ db: database.db, epochs, clock, agentExists: deps.agentExists, sections, adoption });
  return {
    log,
    epochs,
    /** Trust levels, the one function every reader uses. */
    levels: createTrustLevels({ db: database.db, sqlite: database.sqlite, clock }),
    /** A trust module's projection, trace section and adoption counts. */
    addProjection(p: { replay?: ReplayerFactory; trace?: TraceSection; adoption?: AdoptionSource }) {
      if (p.replay) projections.push(p.replay);
      if (p.trace) sections.push(p.trace);
      if (p.adoption) adoption.push(p.adoption);
    },
    routes: trustRoutes({ log, admin, parity }),
  };
}

export type TrustModule = Awaited<ReturnType<typeof createTrustModule>>;
