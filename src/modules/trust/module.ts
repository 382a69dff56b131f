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
import { epochsReplayer } from './epochs-replay';
import { createTrustLog } from './log';
import { createTrustLogStore } from './log-store';
import { createParity, type ReplayerFactory } from './parity';
import { trustRoutes } from './routes';

/** The default origin: the base URL's host and path, then /trust-log. */
export function defaultOrigin(baseUrl: string): string {
  const u = new URL(baseUrl);
  return `${u.host}${u.pathname.replace(/\/+$/, '')}/trust-log`;
}

export async function createTrustModule(deps: { config: Config; database: DatabaseHandle; clock: Clock; agentExists: (id: string) => Promise<boolean> }) {
  const { config, database, clock } = deps;
  const store = createTrustLogStore(database.db, database.engine);
  const log = await createTrustLog({
    store, clock, origin: config.trust.logOrigin ?? defaultOrigin(config.core.baseUrl),
    privateKeyPem: config.trust.logPrivateKey, checkpointIntervalMs: config.trust.checkpointIntervalMs,
  });
  const epochs = createEpochs(database.db, log);
  const projections: ReplayerFactory[] = [epochsReplayer(database.db)];
  const sections: TraceSection[] = [];
  const adoption: AdoptionSource[] = [];
  const parity = createParity({ db: database.db, store, clock, projections });
  const admin = createTrustAdmin({ db: database.db, epochs, clock, agentExists: deps.agentExists, sections, adoption });
  return {
    log,
    epochs,
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
