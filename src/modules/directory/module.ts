/** Builds the directory module for app.ts: skill vouching on the trust log. */
import type { EnvelopeBuilder } from '../../http/envelope';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import type { TrustModule } from '../trust/module';
import { directoryRoutes } from './routes';
import { vouchReplayer } from './vouch-replay';
import { createVouchStore } from './vouch-store';
import { createVouchService, type VouchProfile } from './vouches';

export function createDirectoryModule(deps: {
  database: DatabaseHandle; clock: Clock; envelope: EnvelopeBuilder; trust: TrustModule;
  profile: (agentId: string) => Promise<VouchProfile | undefined>;
}) {
  const store = createVouchStore(deps.database.db);
  const vouches = createVouchService({ db: deps.database.db, store, log: deps.trust.log, epochs: deps.trust.epochs, clock: deps.clock, profile: deps.profile });
  deps.trust.addProjection({
    replay: vouchReplayer(store),
    adoption: async (since) => ({ vouches: await store.counts(since) }),
  });
  return { vouches, routes: directoryRoutes({ vouches, envelope: deps.envelope }) };
}
