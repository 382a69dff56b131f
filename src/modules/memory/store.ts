/**
 * SQL of the memory ledger. Every query is scoped by agent_id. A write is one transaction: the
 * ledger row, the live pointer (memory_heads), the storage counter, the month's write counter and
 * the embedding outbox move together or not at all.
 */
import { settled as settledRead } from '../../infra/db/commit-sync';
import type { DatabaseHandle } from '../../infra/db/database';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { MemoryHeadsTable } from '../../infra/db/tables/memory';
import { createWriteBatcher } from '../../infra/db/write-batcher';
import { prepared, preparedWrite } from '../../infra/db/prepared';
import { createReadCache } from './read-cache';
import { utcMonth } from '../../lib/utc';

export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;

export type { Counters, EntryRow } from './rows';
import type { Counters, EntryRow } from './rows';

export interface NewVersion {
  agentId: string;
  key: string;
  value: string;
  sizeBytes: number;
  importance: string;
  importanceRank: number;
  source: string | null;
  confidence: number;
  derivedStart: number | null;
  derivedEnd: number | null;
  expiresAt: number | null;
  now: number;
}

const live = (now: number, state: any = 'h.state') => (eb: any) =>
  eb.and([eb(state, '=', 'live'), eb.or([eb('h.expires_at', 'is', null), eb('h.expires_at', '>', now)])]);

const entryColumns = [
  'h.key', 'h.version', 'v.value', 'h.size_bytes', 'h.importance', 'h.source', 'h.confidence', 'v.derived_start', 'v.derived_end',
  'h.expires_at', 'h.created_at', 'h.updated_at',
] as const;

export function createMemoryStore({ db, sqlite, commits }: Pick<DatabaseHandle, 'db' | 'sqlite' | 'commits'>) {
  const batcher = createWriteBatcher(commits);
  // SQLite only: one process owns the database, so this store sees every change (read-cache.ts).
  const cache = sqlite ? createReadCache() : undefined;
  // Keys in code-point order on both engines: PostgreSQL would otherwise sort by the database's
  // collation (en_US puts "_x" before "A"), and pages of a list would differ from SQLite's.
  const byKey = sqlite ? sql<string>`h.key` : sql<string>`h.key collate "C"`;
  /**
   * A read is answered only once everything committed before it is on disk: a write whose PUT is not
   * acknowledged yet may be visible to it, and a power loss could still take that back (commit-sync.ts).
   */
  const settled = <T>(read: Promise<T>) => settledRead(commits, read);
  const entries = (q: Db | Trx, agentId: string, now: number, state: any = 'h.state') =>
    q.selectFrom('memory_heads as h')
      .innerJoin('memory_versions as v', (j) => j.onRef('v.agent_id', '=', 'h.agent_id').onRef('v.key', '=', 'h.key').onRef('v.version', '=', 'h.version'))
      .where('h.agent_id', '=', agentId)
      .where(live(now, state));
  /**
   * Live entries of some keys, found through the primary key. Without statistics SQLite's planner
   * takes memory_heads_context_idx (agent_id, state) for `key IN (…)` and walks every live entry of
   * the agent (~4 ms per search at 10,000 entries); a unary `+` keeps the state test out of index
   * selection. SQLite only: PostgreSQL has no unary + for text and plans from its statistics.
   */
  const entriesByKeys = (agentId: string, now: number, keys: string[]) =>
    entries(db, agentId, now, sqlite ? sql`+${sql.ref('h.state')}` : 'h.state').where('h.key', 'in', keys.length ? keys : ['']);

  /** The four counter subqueries, selectable on their own or next to an entry (one round trip). */
  const counterSelects = (agentId: string, month: string, now: number) => (eb: any) => [
    eb.selectFrom('memory_usage').select('writes').where('agent_id', '=', agentId).where('month', '=', month).as('c_writes'),
    eb.selectFrom('memory_usage').select('searches').where('agent_id', '=', agentId).where('month', '=', month).as('c_searches'),
    eb.selectFrom('memory_agents').select('storage_bytes').where('agent_id', '=', agentId).as('c_stored'),
    // Expired entries not yet swept still sit in the counter; they are not live, so subtract them.
    eb.selectFrom('memory_heads').select((e: any) => e.fn.coalesce(e.fn.sum('size_bytes'), sql<number>`0`).as('s'))
      .where('agent_id', '=', agentId).where('state', '=', 'live').where('expires_at', '<=', now).as('c_expired'),
  ];
  const countersOf = (row: { c_writes: unknown; c_searches: unknown; c_stored: unknown; c_expired: unknown }): Counters => ({
    writes: Number(row.c_writes ?? 0),
    searches: Number(row.c_searches ?? 0),
    storageBytes: Number(row.c_stored ?? 0) - Number(row.c_expired ?? 0),
  });

  async function counters(q: Db | Trx, agentId: string, month: string, now: number): Promise<Counters> {
    const row = await q.selectNoFrom(counterSelects(agentId, month, now)).executeTakeFirstOrThrow();
    return countersOf(row as never);
  }

  // Sentinels: values no real call uses, found again in the compiled parameter list.
  const S = { agent: '\u0000agent', key: '\u0000key', month: '\u0000month', now: -987_654_321_012_345 };
  // Reads of committed data: straight on the SQLite connection while no write batch is open (prepared.ts).
  // With the read cache also the soonest expiry among the agent's live entries after `now`: until
  // then the counters hold (read-cache.ts).
  const getWithCountersQ = prepared(db, S, (s) => entries(db, s.agent, s.now).where('h.key', '=', s.key)
    .select(entryColumns).select(counterSelects(s.agent, s.month, s.now))
    .$if(cache !== undefined, (q) => q.select((eb) => eb.selectFrom('memory_heads').select((e) => e.fn.min('expires_at').as('n'))
      .where('agent_id', '=', s.agent).where('state', '=', 'live').where('expires_at', '>', s.now).as('c_next_expiry'))), sqlite);

  // Run only inside the write's transaction (direct on the SQLite connection there; see prepared.ts).
  const countersQ = prepared(db, S, (s) => db.selectNoFrom(counterSelects(s.agent, s.month, s.now)), sqlite);
  const prevQ = prepared(db, S, (s) => db.selectFrom('memory_heads').select(['version', 'state', 'size_bytes', 'expires_at', 'created_at'])
    .where('agent_id', '=', s.agent).where('key', '=', s.key), sqlite);
  // The write statements, with one sentinel per column value.
  const W = {
    agent: '\u0000agent', key: '\u0000key', version: -987_654_321_000_001, value: '\u0000value', size: -987_654_321_000_002,
    importance: '\u0000importance', rank: -987_654_321_000_003, source: '\u0000source', confidence: -987_654_321_000_004,
    dstart: -987_654_321_000_005, dend: -987_654_321_000_006, expires: -987_654_321_000_007, now: -987_654_321_000_008,
    created: -987_654_321_000_009,
  };
  const insertVersionQ = prepared(db, W, (w) => db.insertInto('memory_versions').values({
    agent_id: w.agent, key: w.key, version: w.version, op: 'put', value: w.value, size_bytes: w.size, importance: w.importance,
    source: w.source, confidence: w.confidence, derived_start: w.dstart, derived_end: w.dend, expires_at: w.expires, created_at: w.now,
  }), sqlite);
  const upsertHeadQ = prepared(db, W, (w) => {
    const head = {
      version: w.version, state: 'live', size_bytes: w.size, importance: w.importance, importance_rank: w.rank, source: w.source,
      confidence: w.confidence, expires_at: w.expires, updated_at: w.now, created_at: w.created,
    };
    return db.insertInto('memory_heads').values({ agent_id: w.agent, key: w.key, ...head })
      .onConflict((oc) => oc.columns(['agent_id', 'key']).doUpdateSet(head));
  }, sqlite);

  // The month's write counter (+1, capped or not; no row changed when the cap is reached) and the
  // storage counter. No RETURNING: the new count comes back with the counters read after it, and on
  // SQLite an upsert with RETURNING costs four times one without (prepared.ts).
  const C = { agent: '\u0000agent', month: '\u0000month', limit: -987_654_321_000_010, delta: -987_654_321_000_011, added: -987_654_321_000_012 };
  const countWrite = (c: typeof C, capped: boolean) => db.insertInto('memory_usage')
    .values({ agent_id: c.agent, month: c.month, writes: 1, searches: 0 })
    .onConflict((oc) => {
      const up = oc.columns(['agent_id', 'month']).doUpdateSet({ writes: sql`memory_usage.writes + 1` });
      return capped ? up.where('memory_usage.writes', '<', c.limit) : up;
    });
  const countWriteQ = preparedWrite(db, C, (c) => countWrite(c, false), sqlite);
  // The lock every writer of an agent takes first, counting nothing: the month's usage row (created
  // empty when missing). A put takes it with its count; a delete and the expiry sweep take it here,
  // so on PostgreSQL none of them reads a head another is changing (the same version twice, a
  // sweep marking a key expired that a put had just rewritten, storage released twice).
  const lockAgentQ = preparedWrite(db, C, (c) => db.insertInto('memory_usage')
    .values({ agent_id: c.agent, month: c.month, writes: 0, searches: 0 })
    .onConflict((oc) => oc.columns(['agent_id', 'month']).doUpdateSet({ writes: sql`memory_usage.writes` })), sqlite);
  const countCappedWriteQ = preparedWrite(db, C, (c) => countWrite(c, true), sqlite);
  const storageQ = prepared(db, C, (c) => db.insertInto('memory_agents').values({ agent_id: c.agent, storage_bytes: c.delta, live_keys: 1 })
    .onConflict((oc) => oc.column('agent_id').doUpdateSet({
      storage_bytes: sql`memory_agents.storage_bytes + ${c.delta}`,
      live_keys: sql`memory_agents.live_keys + ${c.added}`,
    })), sqlite);

  return {
    /** The agent's counters (stats, a DELETE's usage): a memory read, so answered once what it saw is on disk. */
    counters: (agentId: string, month: string, now: number) => settled(counters(db, agentId, month, now)),

    /** A live entry and the agent's counters in one query (GET); undefined when the key has no live value. */
    async getWithCounters(agentId: string, key: string, month: string, now: number): Promise<{ entry: EntryRow; counters: Counters } | undefined> {
      // A kept read was on disk when it was kept, and nothing of the agent has changed since.
      const hit = cache?.get(agentId, key, month, now);
      if (hit) return hit;
      const gen = cache?.generation(agentId);
      const [row] = await settled(getWithCountersQ({ agent: agentId, key, month, now }));
      if (!row) return undefined;
      const read = { entry: row as unknown as EntryRow, counters: countersOf(row as never) };
      if (cache) {
        const next = (row as { c_next_expiry?: number | null }).c_next_expiry;
        cache.set(agentId, key, month, gen!, read, next === null || next === undefined ? null : Number(next));
      }
      return read;
    },

    async get(agentId: string, key: string, now: number): Promise<EntryRow | undefined> {
      return (await settled(entries(db, agentId, now).where('h.key', '=', key).select(entryColumns).executeTakeFirst())) as EntryRow | undefined;
    },

    /** Live values of several keys (search hits), in no particular order. */
    async getMany(agentId: string, keys: string[], now: number): Promise<EntryRow[]> {
      if (keys.length === 0) return [];
      return (await settled(entriesByKeys(agentId, now, keys).select(entryColumns).execute())) as EntryRow[];
    },

    /** Ranked by importance, then recency (context reload). */
    async context(agentId: string, now: number, minRank: number, limit: number): Promise<EntryRow[]> {
      return (await settled(entries(db, agentId, now).where('h.importance_rank', '>=', minRank)
        .orderBy('h.importance_rank', 'desc').orderBy('h.updated_at', 'desc').orderBy(byKey)
        .limit(limit).select(entryColumns).execute())) as EntryRow[];
    },

    async list(agentId: string, now: number, f: { prefix?: string; importance?: string; offset: number; limit: number }) {
      let q = db.selectFrom('memory_heads as h').where('h.agent_id', '=', agentId).where(live(now));
      // substr rather than LIKE: '_' is a key character, and SQLite's LIKE ignores case.
      if (f.prefix) q = q.where(sql`substr(h.key, 1, ${f.prefix.length})`, '=', f.prefix);
      if (f.importance) q = q.where('h.importance', '=', f.importance);
      const [rows, total] = await settled(Promise.all([
        q.select(['h.key', 'h.size_bytes', 'h.importance', 'h.source', 'h.confidence', 'h.expires_at', 'h.created_at', 'h.updated_at', 'h.version'])
          .orderBy(byKey).limit(f.limit).offset(f.offset).execute(),
        q.select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
      ]));
      return { rows, total: Number(total.n) };
    },

    /**
     * Appends a version and moves the live pointer. `check` runs inside the transaction with the
     * previous head and the fresh counters (after this write was counted), and throws to refuse;
     * then `charge` (billing, in the same transaction) and, after the rows, `afterWrite`.
     */
    async put<C = never>(
      v: NewVersion,
      month: string,
      writeLimit: number | null,
      check: (prev: Pick<MemoryHeadsTable, 'version' | 'state' | 'size_bytes' | 'expires_at'> | undefined, c: Counters) => void,
      hooks: { charge?: (trx: Trx) => Promise<C>; afterWrite?: (trx: Trx) => Promise<void> } = {},
    ): Promise<{ version: number; counters: Counters; outOfWrites: boolean; charged?: C }> {
      return batcher.submit(async (trx) => {
        // Inside the open transaction: a read that starts now waits for its COMMIT (prepared.ts), and
        // one that started before cannot be kept (read-cache.ts).
        cache?.changed(v.agentId);
        // The usage upsert comes first: on PostgreSQL its row lock serializes one agent's writers, so
        // the storage check below sees every earlier write of that agent.
        const counted = await (writeLimit === null ? countWriteQ : countCappedWriteQ)({ agent: v.agentId, month, limit: writeLimit ?? 0 }, trx);
        if (counted === 0) return { version: 0, counters: await counters(trx, v.agentId, month, v.now), outOfWrites: true };

        const [prev] = await prevQ({ agent: v.agentId, key: v.key, month, now: v.now }, trx);
        const prevLive = prev?.state === 'live';
        const prevLiveNow = prevLive && (prev.expires_at === null || prev.expires_at > v.now);
        const [row] = await countersQ({ agent: v.agentId, key: v.key, month, now: v.now }, trx);
        const c = countersOf(row as never);
        check(prev, c);
        const charged = hooks.charge ? await hooks.charge(trx) : undefined;

        const version = (prev?.version ?? 0) + 1;
        const w = {
          agent: v.agentId, key: v.key, version, value: v.value, size: v.sizeBytes, importance: v.importance, rank: v.importanceRank,
          source: v.source, confidence: v.confidence, dstart: v.derivedStart, dend: v.derivedEnd, expires: v.expiresAt, now: v.now,
          created: prevLiveNow ? prev.created_at : v.now,
        };
        await insertVersionQ(w, trx);
        await upsertHeadQ(w, trx);
        const delta = v.sizeBytes - (prevLive ? prev.size_bytes : 0);
        await storageQ({ agent: v.agentId, delta, added: prevLive ? 0 : 1 }, trx);
        if (hooks.afterWrite) await hooks.afterWrite(trx);
        const storageBytes = c.storageBytes - (prevLiveNow ? prev.size_bytes : 0) + v.sizeBytes;
        return { version, counters: { ...c, storageBytes }, outOfWrites: false, charged };
      }, v.agentId);
    },

    /** Appends a tombstone; false when the key has no live value. */
    async remove(agentId: string, key: string, now: number, afterWrite?: (trx: Trx) => Promise<void>): Promise<boolean> {
      return batcher.submit(async (trx) => {
        cache?.changed(agentId);
        await lockAgentQ({ agent: agentId, month: utcMonth(now) }, trx);
        const prev = await trx.selectFrom('memory_heads as h').select(['h.version', 'h.size_bytes'])
          .where('h.agent_id', '=', agentId).where('h.key', '=', key).where(live(now)).executeTakeFirst();
        if (!prev) return false;
        const version = prev.version + 1;
        await trx.insertInto('memory_versions').values({
          agent_id: agentId, key, version, op: 'delete', value: null, size_bytes: 0, importance: null, source: null,
          confidence: null, derived_start: null, derived_end: null, expires_at: null, created_at: now,
        }).execute();
        await trx.updateTable('memory_heads').set({ version, state: 'deleted', size_bytes: 0, updated_at: now })
          .where('agent_id', '=', agentId).where('key', '=', key).execute();
        await trx.updateTable('memory_agents').set({
          storage_bytes: sql`storage_bytes - ${prev.size_bytes}`, live_keys: sql`live_keys - 1`,
        }).where('agent_id', '=', agentId).execute();
        if (afterWrite) await afterWrite(trx);
        return true;
      }, agentId);
    },

    /**
     * Counts one successful semantic search (a memory operation, not a write) and returns the
     * counters after it. Group-committed with the writes (batcher.ts) and answered once committed,
     * without waiting for the WAL flush: a search changes no memory, and its count is usage
     * bookkeeping that a process crash cannot lose (the commit is in the WAL) and a power cut in the
     * next millisecond could, in the agent's favour. Later reads still wait for that flush.
     */
    async countSearch(agentId: string, month: string, now: number): Promise<Counters> {
      return batcher.submit(async (trx) => {
        cache?.changed(agentId);
        await trx.insertInto('memory_usage').values({ agent_id: agentId, month, writes: 0, searches: 1 })
          .onConflict((oc) => oc.columns(['agent_id', 'month']).doUpdateSet({ searches: sql`memory_usage.searches + 1` })).execute();
        return counters(trx, agentId, month, now);
      }, agentId, { durable: false });
    },

    /**
     * Marks up to `batch` expired entries as expired and releases their bytes. Returns the keys
     * swept, so their vectors can be dropped.
     */
    async sweepExpired(now: number, batch: number, afterSweep?: (trx: Trx, swept: { agent_id: string; key: string }[]) => Promise<void>) {
      return db.transaction().execute(async (trx) => {
        const expired = (q: typeof trx) => q.selectFrom('memory_heads').select(['agent_id', 'key', 'size_bytes', 'version'])
          .where('state', '=', 'live').where('expires_at', '<=', now);
        const found = await expired(trx).limit(batch).execute();
        // The agents' writer locks, in the order write batches take them (batcher.ts: by agent id),
        // then the heads read again: what a put or delete committed meanwhile is seen, and none can
        // change these agents' heads until this sweep commits.
        const agents = [...new Set(found.map((r) => r.agent_id))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        if (agents.length === 0) return 0;
        const month = utcMonth(now);
        for (const agent of agents) await lockAgentQ({ agent, month }, trx);
        const rows = await expired(trx).where('agent_id', 'in', agents).limit(batch).execute();
        for (const r of rows) cache?.changed(r.agent_id);
        for (const r of rows) {
          await trx.updateTable('memory_heads').set({ state: 'expired', size_bytes: 0 })
            .where('agent_id', '=', r.agent_id).where('key', '=', r.key).where('version', '=', r.version).execute();
          await trx.updateTable('memory_agents').set({
            storage_bytes: sql`storage_bytes - ${r.size_bytes}`, live_keys: sql`live_keys - 1`,
          }).where('agent_id', '=', r.agent_id).execute();
        }
        if (afterSweep && rows.length) await afterSweep(trx, rows);
        return rows.length;
      });
    },

    /** Live values and versions of keys (the indexer's text source); missing keys are absent. */
    async liveValues(agentId: string, keys: string[], now: number): Promise<Map<string, { value: string; version: number }>> {
      const rows = (await entriesByKeys(agentId, now, keys).select(['h.key', 'v.value', 'h.version']).execute());
      return new Map(rows.map((r) => [r.key, { value: r.value as string, version: r.version }]));
    },

    /** The database (the lexical backfill runs its own transactions). */
    db,

    /** Live entries of any agent without a lexical index row (written before the index existed). */
    async entriesWithoutLexical(now: number, limit: number, q: Kysely<Database> | Trx = db) {
      return q.selectFrom('memory_heads as h')
        .innerJoin('memory_versions as v', (j) => j.onRef('v.agent_id', '=', 'h.agent_id').onRef('v.key', '=', 'h.key').onRef('v.version', '=', 'h.version'))
        .select(['h.agent_id', 'h.key', 'v.value'])
        .where(live(now))
        .where(({ not, exists, selectFrom }) => not(exists(
          selectFrom('lexical_docs as ld').select('ld.id')
            .where('ld.collection', '=', 'memory').whereRef('ld.owner_id', '=', 'h.agent_id').whereRef('ld.item_id', '=', 'h.key'),
        )))
        .limit(limit).execute() as Promise<{ agent_id: string; key: string; value: string }[]>;
    },

    /** Live keys of every agent whose vector is missing or made by another model (re-embedding). */
    async keysNeedingVectors(modelId: string, now: number, limit: number) {
      return db.selectFrom('memory_heads as h')
        .select(['h.agent_id', 'h.key'])
        .where(live(now))
        .where(({ not, exists, selectFrom }) => not(exists(
          selectFrom('vector_items as vi').select('vi.id')
            .where('vi.collection', '=', 'memory').whereRef('vi.owner_id', '=', 'h.agent_id').whereRef('vi.item_id', '=', 'h.key')
            .where('vi.model_id', '=', modelId),
        )))
        .where(({ not, exists, selectFrom }) => not(exists(
          selectFrom('vector_outbox as o').select('o.item_id')
            .where('o.collection', '=', 'memory').whereRef('o.owner_id', '=', 'h.agent_id').whereRef('o.item_id', '=', 'h.key'),
        )))
        .limit(limit).execute();
    },
  };
}

export type MemoryStore = ReturnType<typeof createMemoryStore>;
