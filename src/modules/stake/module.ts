/**
 * Builds the stake module for app.ts: stake, sponsorship and slashing on the trust log, with the
 * money moved through billing's stake ledger. Registers its projection's replay (parity), its
 * decision-trace section and its adoption counts with the trust module, and gives the trust levels
 * their `staked` and `sponsored` facts.
 */
import type { Config } from '../../config';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import type { StakeLedger } from '../billing/stake-ledger';
import type { StandingReader, StandingsReader } from '../trust/levels';
import type { TrustModule } from '../trust/module';
import { stakeReplayer } from './replay';
import { stakeRoutes } from './routes';
import { createStakeService, type StakeProfile } from './service';
import { createStakeStore } from './store';
import { stakeTrace } from './trace';

export function createStakeModule(deps: {
  config: Config; database: DatabaseHandle; clock: Clock; envelope: EnvelopeBuilder; trust: TrustModule; ledger: StakeLedger;
  profile: (agentId: string) => Promise<StakeProfile | undefined>;
  log?: (msg: string, err: unknown) => void;
}) {
  const { clock } = deps;
  const store = createStakeStore(deps.database.db, deps.database.sqlite);
  const stakes = createStakeService({
    db: deps.database.db, store, ledger: deps.ledger, log: deps.trust.log, epochs: deps.trust.epochs, clock, profile: deps.profile,
  });
  deps.trust.addProjection({
    replay: stakeReplayer(store),
    trace: stakeTrace(store, clock),
    adoption: async (since) => ({ stake: await store.counts(clock.now(), since) }),
  });
  const standing: StandingReader = async (agentId) => {
    const s = await store.standing(agentId, clock.now());
    return { stakedActive: s.staked, sponsoredActive: s.sponsored };
  };
  const standings: StandingsReader = async (agentIds) => {
    const s = await store.standingOf(agentIds, clock.now());
    return new Map(agentIds.map((id) => [id, { stakedActive: s.staked.has(id), sponsoredActive: s.sponsored.has(id) }]));
  };

  // Cooling stakes whose time is up return their credit: on the agent's own reads, and here, by any instance.
  let sweeping: Promise<unknown> | undefined;
  const sweep = () => {
    sweeping ??= stakes.settleDue()
      .catch((e) => deps.log?.('stake settle failed', e))
      .finally(() => (sweeping = undefined));
  };
  const timer = setInterval(sweep, deps.config.trust.stakeSettleSeconds * 1000);
  timer.unref();

  return {
    stakes,
    standing,
    standings,
    routes: stakeRoutes({ stakes, envelope: deps.envelope }),
    async close() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
