/** SQL of stakes, sponsorships and slashes (projections of the trust log). */
import type SQLite from 'better-sqlite3';
import type { Kysely, Transaction } from 'kysely';
import { prepared } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import type { SlashesTable, SponsorshipsTable, StakesTable } from '../../infra/db/tables/stake';

type Db = Kysely<Database> | Transaction<Database>;

/** Numbers as numbers (PostgreSQL returns bigint columns as strings). */
export function normalStake(r: StakesTable): StakesTable {
  const n = (v: number | null) => (v === null ? null : Number(v));
  return {
    ...r, units: Number(r.units), staked_at: Number(r.staked_at), locked_until: Number(r.locked_until), cooling_until: n(r.cooling_until),
    ended_at: n(r.ended_at), released_units: n(r.released_units), created_log_index: Number(r.created_log_index), updated_log_index: Number(r.updated_log_index),
  };
}

export function normalSponsorship(r: SponsorshipsTable): SponsorshipsTable {
  const n = (v: number | null) => (v === null ? null : Number(v));
  return {
    ...r, created_at: Number(r.created_at), created_log_index: Number(r.created_log_index), revoke_requested_at: n(r.revoke_requested_at),
    revokes_at: n(r.revokes_at), revoke_log_index: n(r.revoke_log_index), ring_flagged_at: n(r.ring_flagged_at), ring_log_index: n(r.ring_log_index),
  };
}

/** A sponsorship still in force at `now`: no revoke asked, or its grace not over (`column`: qualified in a join). */
export const inForce = (now: number, column = 'revokes_at') => (eb: any) => eb.or([eb(column, 'is', null), eb(column, '>', now)]);

export function createStakeStore(db: Kysely<Database>, sqlite?: SQLite.Database) {
  // Every trust-level check reads it (GET /v1/me, passports): compiled once, both facts in one statement.
  const S = { agent: '\u0000agent', now: -987_654_321_000_631 };
  const standingQ = prepared(db, S, (s) => db.selectNoFrom((eb) => [
    eb.exists(eb.selectFrom('stakes').select('stake_id').where('agent_id', '=', s.agent).where('status', '=', 'active').where('units', '>', 0)).as('staked'),
    eb.exists(eb.selectFrom('sponsorships as sp').innerJoin('stakes as st', 'st.agent_id', 'sp.sponsor_agent_id').select('sp.sponsorship_id')
      .where('sp.ward_agent_id', '=', s.agent).where('sp.ring_flagged_at', 'is', null)
      .where(inForce(s.now, 'sp.revokes_at'))
      .where('st.status', '=', 'active').where('st.units', '>', 0)).as('sponsored'),
  ]), sqlite);
  return {
    /** The agent's open stake (active or cooling). */
    async open(agentId: string, trx: Db = db): Promise<StakesTable | undefined> {
      const r = await trx.selectFrom('stakes').selectAll().where('agent_id', '=', agentId).where('status', 'in', ['active', 'cooling']).executeTakeFirst();
      return r ? normalStake(r) : undefined;
    },

    /** The agent's stakes, newest first. */
    async history(agentId: string, trx: Db = db): Promise<StakesTable[]> {
      return (await trx.selectFrom('stakes').selectAll().where('agent_id', '=', agentId).orderBy('staked_at', 'desc').execute()).map(normalStake);
    },

    async insertStake(trx: Transaction<Database>, row: StakesTable): Promise<void> {
      await trx.insertInto('stakes').values(row).execute();
    },

    /** Changes an open stake; false when it is no longer in `from` (another writer moved it first). */
    async updateStake(trx: Transaction<Database>, stakeId: string, from: string[], patch: Partial<StakesTable>): Promise<boolean> {
      const r = await trx.updateTable('stakes').set(patch).where('stake_id', '=', stakeId).where('status', 'in', from).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /** Agents whose cooling ended by `now` (their credit is due back). */
    async dueBack(now: number, limit: number): Promise<string[]> {
      const rows = await db.selectFrom('stakes').select('agent_id').where('status', '=', 'cooling').where('cooling_until', '<=', now).limit(limit).execute();
      return rows.map((r) => r.agent_id);
    },

    /** The open sponsorship of this pair (no revoke asked, or one in its grace). */
    async pair(sponsorId: string, wardId: string, now: number, trx: Db = db): Promise<SponsorshipsTable | undefined> {
      const r = await trx.selectFrom('sponsorships').selectAll().where('sponsor_agent_id', '=', sponsorId).where('ward_agent_id', '=', wardId)
        .where(inForce(now)).orderBy('created_at', 'desc').executeTakeFirst();
      return r ? normalSponsorship(r) : undefined;
    },

    /** Sponsorships in force where the agent is the sponsor (its wards). */
    async wardsOf(sponsorId: string, now: number, trx: Db = db): Promise<SponsorshipsTable[]> {
      return (await trx.selectFrom('sponsorships').selectAll().where('sponsor_agent_id', '=', sponsorId).where(inForce(now)).execute()).map(normalSponsorship);
    },

    /** Sponsorships in force where the agent is the ward. */
    async sponsorsOf(wardId: string, now: number, trx: Db = db): Promise<SponsorshipsTable[]> {
      return (await trx.selectFrom('sponsorships').selectAll().where('ward_agent_id', '=', wardId).where(inForce(now)).execute()).map(normalSponsorship);
    },

    /** Edges in force leaving (`out`) or entering these agents: the ring search's one step. */
    async edges(agents: string[], direction: 'out' | 'in', now: number, trx: Db = db): Promise<SponsorshipsTable[]> {
      if (agents.length === 0) return [];
      const col = direction === 'out' ? 'sponsor_agent_id' : 'ward_agent_id';
      return (await trx.selectFrom('sponsorships').selectAll().where(col, 'in', agents).where(inForce(now)).execute()).map(normalSponsorship);
    },

    async insertSponsorship(trx: Transaction<Database>, row: SponsorshipsTable): Promise<void> {
      await trx.insertInto('sponsorships').values(row).execute();
    },

    async updateSponsorship(trx: Transaction<Database>, id: string, patch: Partial<SponsorshipsTable>): Promise<void> {
      await trx.updateTable('sponsorships').set(patch).where('sponsorship_id', '=', id).execute();
    },

    async insertSlash(trx: Transaction<Database>, row: SlashesTable): Promise<void> {
      await trx.insertInto('slashes').values(row).execute();
    },

    /**
     * Whether the agent is `staked` (an active stake with credit in it) and `sponsored` (a sponsorship
     * in force, not ring-flagged, whose sponsor is staked), in one read.
     */
    async standing(agentId: string, now: number): Promise<{ staked: boolean; sponsored: boolean }> {
      const [r] = await standingQ({ agent: agentId, now });
      // SQLite answers 0/1, PostgreSQL booleans.
      return { staked: Boolean(r?.staked), sponsored: Boolean(r?.sponsored) };
    },

    /** `standing` of many agents in two reads (a directory page): the agents with an active stake, and those sponsored. */
    async standingOf(agentIds: string[], now: number): Promise<{ staked: Set<string>; sponsored: Set<string> }> {
      if (agentIds.length === 0) return { staked: new Set(), sponsored: new Set() };
      const [staked, sponsored] = await Promise.all([
        db.selectFrom('stakes').select('agent_id').where('agent_id', 'in', agentIds).where('status', '=', 'active').where('units', '>', 0).execute(),
        db.selectFrom('sponsorships as sp').innerJoin('stakes as st', 'st.agent_id', 'sp.sponsor_agent_id').select('sp.ward_agent_id')
          .where('sp.ward_agent_id', 'in', agentIds).where('sp.ring_flagged_at', 'is', null)
          .where((eb) => eb.or([eb('sp.revokes_at', 'is', null), eb('sp.revokes_at', '>', now)]))
          .where('st.status', '=', 'active').where('st.units', '>', 0).execute(),
      ]);
      return { staked: new Set(staked.map((r) => r.agent_id)), sponsored: new Set(sponsored.map((r) => r.ward_agent_id)) };
    },

    all(snap: Db = db) {
      return Promise.all([
        snap.selectFrom('stakes').selectAll().execute().then((r) => r.map(normalStake)),
        snap.selectFrom('sponsorships').selectAll().execute().then((r) => r.map(normalSponsorship)),
        snap.selectFrom('slashes').selectAll().execute(),
      ]).then(([stakes, sponsorships, slashes]) => ({ stakes, sponsorships, slashes }));
    },

    /** Adoption counts: open stakes by tier and status, sponsorships in force and flagged, slashes since `since`. */
    async counts(now: number, since: number) {
      const [stakes, sponsorships, slashes] = await Promise.all([
        db.selectFrom('stakes').select(['tier', 'status', (eb) => eb.fn.countAll<number>().as('n')]).where('status', 'in', ['active', 'cooling']).groupBy(['tier', 'status']).execute(),
        db.selectFrom('sponsorships').select(['ring_flagged_at']).where(inForce(now)).execute(),
        db.selectFrom('slashes').select((eb) => eb.fn.countAll<number>().as('n')).where('decided_at', '>=', since).executeTakeFirstOrThrow(),
      ]);
      const byTier: Record<string, number> = { low: 0, medium: 0, high: 0 };
      let cooling = 0;
      for (const r of stakes) {
        if (r.status === 'active') byTier[r.tier] = (byTier[r.tier] ?? 0) + Number(r.n);
        else cooling += Number(r.n);
      }
      return {
        stakes_by_tier: byTier,
        stakes_cooling: cooling,
        sponsorships_in_force: sponsorships.length,
        sponsorships_ring_flagged: sponsorships.filter((s) => s.ring_flagged_at !== null).length,
        slashes_in_window: Number(slashes.n),
      };
    },
  };
}

export type StakeStore = ReturnType<typeof createStakeStore>;
