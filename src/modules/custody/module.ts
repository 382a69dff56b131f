/**
 * Builds the custody module for app.ts: covenants, recovery (with channel delivery and staged
 * resurrection), custody transfer, their routes, and their projections' replay, trace section and
 * adoption counts in the trust module. Identity is reached only through its custody port.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Database } from '../../infra/db/schema';
import type { RateLimiter } from '../../infra/limits';
import { createGuardedClient, type GuardedClient } from '../../infra/web';
import { iso, type Clock } from '../../lib/clock';
import type { CustodyPort } from '../identity/custody-port';
import type { TrustModule } from '../trust/module';
import { createChannel } from './channel';
import { createCovenants } from './covenants';
import { intentState, STAGED_RESURRECTION_DAYS } from './model';
import { createRecovery } from './recovery';
import { custodyReplayer } from './replay';
import { createRestrictions, STAGED_RESTRICTIONS, type Restrictions } from './restrictions';
import { custodyRoutes } from './routes';
import { createCustodyStore } from './store';
import { createTransfers } from './transfer';

/** The staged-resurrection checks alone (billing's metering and the commons routes need them before the module is built). */
export const createCustodyRestrictions = (db: Kysely<Database>, clock: Clock, sqlite?: SQLite.Database): Restrictions =>
  createRestrictions({ store: createCustodyStore(db, sqlite), clock });

export function createCustodyModule(deps: {
  config: Config; database: DatabaseHandle; clock: Clock; trust: TrustModule; identity: CustodyPort; restrictions: Restrictions; limiter: RateLimiter;
  levelsOf: (agentId: string) => Promise<string[]>;
  client?: GuardedClient;
}) {
  const { config, clock, trust, identity, restrictions } = deps;
  const db = deps.database.db;
  const baseUrl = config.core.baseUrl;
  const store = createCustodyStore(db, deps.database.sqlite);
  const client = deps.client ?? createGuardedClient({
    allowLoopback: config.core.outboundAllowLoopback,
    allowedPorts: config.web.outboundAllowedPorts,
    userAgent: 'svc-recovery/1.0',
    timeoutMs: 10_000,
    maxRedirects: 0,
  });
  const channel = createChannel({ client, store, clock, baseUrl });
  const recovery = createRecovery({
    db, store, log: trust.log, epochs: trust.epochs, clock, identity, channel, limiter: deps.limiter, baseUrl,
    limits: {
      perAddressPerMinute: config.trust.recoveryPerAddressPerMinute, perAgentPerHour: config.trust.recoveryPerAgentPerHour,
      channelCodesPerHour: config.trust.recoveryChannelCodesPerHour,
    },
  });
  const covenants = createCovenants({
    db, store, log: trust.log, epochs: trust.epochs, clock, identity, levelsOf: deps.levelsOf, client,
    amendBlocked: (agentId, trx) => recovery.amendBlocked(agentId, trx),
  });
  const transfers = createTransfers({ db, store, log: trust.log, epochs: trust.epochs, clock, identity, restrictions, recovery, baseUrl });

  trust.addProjection({
    replay: custodyReplayer(store),
    trace: async (agentId) => {
      const now = clock.now();
      const [covenant, latest, staged] = await Promise.all([store.activeCovenant(agentId), store.latestIntent(agentId), store.stagedIntent(agentId, now)]);
      return {
        covenant: {
          value: covenant?.template_id ?? null,
          rule: 'the covenant bound last (covenant.bound, covenant.amended); a custody transfer ends it',
          log_indexes: covenant?.bound_log_index === null || covenant?.bound_log_index === undefined ? [] : [Number(covenant.bound_log_index)],
        },
        recovery_intent: {
          value: latest ? { intent_id: latest.intent_id, state: intentState(latest, now) } : null,
          rule: 'the newest recovery intent: open for a 7-day veto window, then initiated and completed within 7 more days or lapsed',
          log_indexes: latest ? [Number(latest.opened_log_index), ...(latest.closed_log_index === null ? [] : [Number(latest.closed_log_index)])] : [],
        },
        staged_resurrection: {
          value: staged ? { until: iso(Number(staged.staged_until)), intent_id: staged.intent_id, restricts: [...STAGED_RESTRICTIONS] } : null,
          rule: `a recovery completed through a channel covenant (the weak tier) restricts spending credit, custody transfer and commons writes for ${STAGED_RESURRECTION_DAYS} days`,
          log_indexes: staged?.closed_log_index === null || staged?.closed_log_index === undefined ? [] : [Number(staged.closed_log_index)],
        },
      };
    },
    adoption: async () => ({ custody: await store.intentCounts(clock.now()) }),
  });

  return {
    covenants,
    recovery,
    transfers,
    restrictions,
    /** Registration's transaction: the covenant it bound becomes a trust log entry. */
    registered: covenants.registered,
    /** Covenants older than the log get their entries (start-up). */
    backfill: () => covenants.backfill(),
    routes: custodyRoutes({ covenants, recovery, transfers, agentExists: async (id) => (await identity.agent(id)) !== undefined }),
    async close() {
      if (!deps.client) await client.close();
    },
  };
}

export type CustodyModule = ReturnType<typeof createCustodyModule>;
