/** Builds the directory module for app.ts: the public directory and skill vouching, on the trust log. */
import type { Config } from '../../config';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import type { DirectoryEntries } from '../identity/directory-entries';
import type { TrustModule } from '../trust/module';
import { createDirectory, type DirectoryReputation } from './directory';
import { createRankStore } from './rank-store';
import { directoryRoutes } from './routes';
import type { SyntheticProfile } from './synthetic';
import { vouchReplayer } from './vouch-replay';
import { createVouchStore } from './vouch-store';
import { createVouchService, type VouchProfile } from './vouches';

export async function createDirectoryModule(deps: {
  config: Config; database: DatabaseHandle; clock: Clock; envelope: EnvelopeBuilder; trust: TrustModule;
  profile: (agentId: string) => Promise<VouchProfile | undefined>;
  entries: DirectoryEntries; reputation: DirectoryReputation;
  /** The operator's founding profiles (loadSyntheticProfiles, read before the database is opened). */
  synthetic: SyntheticProfile[];
  log?: (msg: string, err: unknown) => void;
}) {
  const { config, clock } = deps;
  const store = createVouchStore(deps.database.db);
  const vouches = createVouchService({ db: deps.database.db, store, log: deps.trust.log, epochs: deps.trust.epochs, clock, profile: deps.profile });
  deps.trust.addProjection({
    replay: vouchReplayer(store),
    adoption: async (since) => ({ vouches: await store.counts(since) }),
  });
  const directory = createDirectory({
    db: deps.database.db, store: createRankStore(deps.database.db), vouches: store, entries: deps.entries,
    epochs: deps.trust.epochs, levels: deps.trust.levels, reputation: deps.reputation, clock, baseUrl: config.core.baseUrl,
    synthetic: deps.synthetic,
    cursorSecret: config.trust.directoryCursorSecret, cursorTtlMs: config.trust.directoryCursorTtlSeconds * 1000,
  });
  await directory.syncSynthetic();
  deps.trust.epochs.onRollOver((trx, agentId, at) => directory.epochRolled(trx, agentId, at));

  // Re-rank (reputation decays) and reconcile at start and every SVC_DIRECTORY_REFRESH_SECONDS, one at a time.
  let refreshing: Promise<unknown> | undefined;
  const refresh = () => {
    refreshing ??= directory.refresh()
      .catch((e) => deps.log?.('directory refresh failed', e))
      .finally(() => (refreshing = undefined));
  };
  refresh();
  const timer = setInterval(refresh, config.trust.directoryRefreshSeconds * 1000);
  timer.unref();

  return {
    vouches,
    directory,
    routes: directoryRoutes({ vouches, directory, envelope: deps.envelope }),
    async close() {
      clearInterval(timer);
      await refreshing;
    },
  };
}
