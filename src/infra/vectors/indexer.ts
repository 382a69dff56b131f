/**
 * Keeps vectors in step with their items through an outbox (`vector_outbox`):
 *
 * - a writer calls `enqueue(trx, ...)` in its own transaction, so "this item needs a vector" is as
 *   durable as the write itself and survives a crash; the write never waits for the model;
 * - a background loop embeds pending items in batches and stores their vectors;
 * - a search first calls `drain(collection, owner)`, which embeds that owner's pending items (newest
 *   first, up to `drainMax`), so a value stored by a PUT that has returned is found by the next search;
 * - `enqueueStale` queues every item whose vector is missing or made by another model: after a
 *   model change the index is rebuilt in the background, and queries only ever compare vectors of
 *   the current model.
 *
 * A text the model refuses (`blamesInput`: a 400/413/422 from the server, e.g. over its token limit,
 * or the local model throwing) must not hold up the queue: the refused batch is split in halves until
 * the refused text stands alone; the others get their vectors, and the refused item's row stays in
 * the outbox with `attempts` + 1 and `not_before` set (1 minute, doubling per refusal, at most a
 * day). Until then neither the loop nor a search's drain picks it up, so the owner's searches answer
 * (without that item) instead of failing for good. A new write of the item resets both; a start of
 * the process clears `not_before`, so an operator who fixes the model's settings and restarts sees
 * the items retried at once. Any other failure (server away, timeout, 429) backs off the whole loop.
 *
 * One batch at a time per process (a promise chain), so an old text never overwrites a newer one
 * here; across instances, `item_version` in vector_items keeps the newest. Batches of different
 * owners' drains and of the background loop take turns on the chain.
 */
import { randomUUID } from 'node:crypto';
import type SQLite from 'better-sqlite3';
import type { ExpressionBuilder, Kysely } from 'kysely';
import { preparedWrite } from '../db/prepared';
import type { Clock } from '../../lib/clock';
import type { Database } from '../db/schema';
import { allChunkIds, blamesInput, chunkId, chunkText, sentenceWindows, type Embedder } from '../embeddings';
import type { Queryable, VectorIndex, VectorRecord } from './types';

/** Text and version of live items of one owner; items missing from the map are gone (their vector is dropped). */
export type TextSource = (ownerId: string, itemIds: string[]) => Promise<Map<string, { text: string; version: number }>>;

/**
 * How a source's texts are cut for the model: by default overlapping windows of about what the model
 * reads (Embedder.chunkWords); `windowWords` instead cuts them into windows of whole sentences and
 * lines of at most that many words (sentenceWindows), for texts that pack many short records.
 */
export interface SourceOptions { windowWords?: number }

export interface VectorIndexerOptions {
  db: Kysely<Database>;
  /** SQLite: the connection, so the outbox write of each PUT runs straight on it (prepared.ts). */
  sqlite?: SQLite.Database;
  index: VectorIndex;
  embedder: Embedder;
  clock: Clock;
  /** Text sources by collection; modules add theirs with addSource(). */
  sources?: Record<string, TextSource>;
  batchSize: number;
  intervalMs: number;
  /** Most pending items `drain` embeds. */
  drainMax?: number;
  /** Batches embedded side by side by one background step (one per embedding thread). */
  parallel?: number;
  /** Wait before a refused item is tried again, doubling per refusal up to a day (default 60 s). */
  refusedRetryMs?: number;
  log?: (msg: string, err?: unknown) => void;
}

/** The outbox as the operator sees it (GET /admin/vectors); times are ISO 8601. */
export interface Backlog {
  collections: { collection: string; pending: number; set_aside: number; oldest_pending_at: string | null; next_retry_at: string | null }[];
  set_aside_items: { collection: string; owner_id: string; item_id: string; refusals: number; retry_at: string | null }[];
}

type Pending = { collection: string; owner_id: string; item_id: string; ticket: string; attempts: number };
const PENDING = ['collection', 'owner_id', 'item_id', 'ticket', 'attempts'] as const;
const DAY_MS = 86_400_000;
/**
 * Batches per embedding thread in one background step. A step ends when all its lanes have, so a
 * lane done first waits for the others and for the next step's read: with several batches per lane
 * (each embedded while the one before it is stored) that wait comes once per several batches.
 */
const STEP_BATCHES_PER_LANE = 4;

export function createVectorIndexer(o: VectorIndexerOptions) {
  const drainMax = o.drainMax ?? 1000;
  const parallel = Math.max(1, o.parallel ?? 1);
  const chunkWords = o.embedder.chunkWords ?? 300;
  const refusedRetryMs = o.refusedRetryMs ?? 60_000;
  const sources: Record<string, TextSource> = { ...(o.sources ?? {}) };
  const windowing: Record<string, number> = {};
  const windowsOf = (collection: string, text: string) => {
    const words = windowing[collection];
    return words ? sentenceWindows(text, Math.min(chunkWords, words)) : chunkText(text, chunkWords);
  };
  // An item's outbox row, written in the writer's transaction (compiled once: every memory PUT runs it).
  const E = { collection: '\u0000collection', owner: '\u0000owner', item: '\u0000item', ticket: '\u0000ticket', now: -987_654_321_000_201 };
  const enqueueQ = preparedWrite(o.db, E, (e) => o.db.insertInto('vector_outbox')
    .values({ collection: e.collection, owner_id: e.owner, item_id: e.item, ticket: e.ticket, enqueued_at: e.now, attempts: 0, not_before: null })
    .onConflict((oc) => oc.columns(['collection', 'owner_id', 'item_id']).doUpdateSet({ ticket: e.ticket, enqueued_at: e.now, attempts: 0, not_before: null })), o.sqlite);
  let chain: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /** Runs `fn` after every earlier batch of this process. */
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = chain.then(fn, fn);
    chain = next.catch(() => {});
    return next;
  }

  /** Embeds and stores one batch of pending rows of one (collection, owner). */
  async function process(collection: string, ownerId: string, batch: Pending[], priority: 'query' | 'bulk' = 'bulk'): Promise<void> {
    await store(await prepare(collection, ownerId, batch, priority));
  }

  type Prepared = Awaited<ReturnType<typeof prepare>>;

  /** Reads the batch's texts and embeds them (the model's part; nothing is written). */
  async function prepare(collection: string, ownerId: string, batch: Pending[], priority: 'query' | 'bulk') {
    const source = sources[collection];
    if (!source) throw new Error(`no text source for collection ${collection}`);
    // One order for every writer (a search's drain reads newest first, the loop oldest first): two
    // instances writing the same items then take their row locks in the same order, never crosswise.
    const rows = [...batch].sort((a, b) => (a.item_id < b.item_id ? -1 : a.item_id > b.item_id ? 1 : 0));
    const texts = await source(ownerId, rows.map((r) => r.item_id));
    const live = rows.filter((r) => texts.has(r.item_id));
    // A long text is embedded as chunks (windowsOf), each its own vector (`<id>#<n>`).
    const { embedded, refused } = await embedIsolating(live.map((row) => ({ row, texts: windowsOf(collection, texts.get(row.item_id)!.text) })), priority);
    const records: VectorRecord[] = embedded.flatMap(({ row, vectors }) => vectors.map((vector, i) => ({
      collection, ownerId, itemId: chunkId(row.item_id, i), itemVersion: texts.get(row.item_id)!.version, modelId: o.embedder.modelId, vector,
    })));
    const chunkCount = new Map(embedded.map((e) => [e.row.item_id, e.vectors.length]));
    const gone = rows.filter((r) => !texts.has(r.item_id)).flatMap((r) => allChunkIds(r.item_id));
    return { collection, ownerId, rows, records, chunkCount, gone, refused };
  }

  /** Stores a prepared batch's vectors in one transaction, for the rows whose outbox ticket still stands. */
  async function store({ collection, ownerId, rows, records, chunkCount, gone, refused }: Prepared): Promise<void> {
    const now = o.clock.now();
    await o.db.transaction().execute(async (trx) => {
      // An item's vector is stored only while its outbox row (this ticket) is still there. The text was
      // read and embedded outside this transaction: a DELETE that committed meanwhile removed the row
      // (and the vector) in its own transaction, a newer write replaced the ticket, another instance
      // may have stored it already. Storing it anyway left a vector for a deleted item for good.
      const current = new Set<string>();
      for (const r of rows) {
        if (refused.some((f) => f.row === r)) continue;
        const d = await trx.deleteFrom('vector_outbox').where('collection', '=', collection).where('owner_id', '=', ownerId)
          .where('item_id', '=', r.item_id).where('ticket', '=', r.ticket).executeTakeFirst();
        if (Number(d.numDeletedRows) > 0) current.add(r.item_id);
      }
      await o.index.upsert(records.filter((rec) => current.has(rec.itemId.replace(/#\d+$/, ''))), trx);
      // Chunks of an earlier, longer text of the item.
      const shorter = [...current].flatMap((id) => allChunkIds(id).slice(chunkCount.get(id) ?? 0));
      await o.index.remove(collection, ownerId, [...gone, ...shorter], trx);
      // A refused item waits, and a vector of its earlier text is dropped: it would match the item by
      // words it no longer holds. The ticket check leaves a newer write's row (a new text) alone.
      const waiting: string[] = [];
      for (const { row } of refused) {
        const u = await trx.updateTable('vector_outbox').set({ attempts: row.attempts + 1, not_before: now + refusalWait(row.attempts + 1) })
          .where('collection', '=', collection).where('owner_id', '=', ownerId).where('item_id', '=', row.item_id)
          .where('ticket', '=', row.ticket).executeTakeFirst();
        if (Number(u.numUpdatedRows) > 0) waiting.push(row.item_id);
      }
      await o.index.remove(collection, ownerId, waiting.flatMap(allChunkIds), trx);
    });
    for (const { row, error } of refused) {
      o.log?.(`vector indexing: the model refused the text of ${collection} item ${JSON.stringify(row.item_id)} of owner ${ownerId} `
        + `(refusal ${row.attempts + 1}); it is left out of search and tried again in ${Math.round(refusalWait(row.attempts + 1) / 1000)} s`, error);
    }
  }

  /** Wait after the n-th refusal of an item: refusedRetryMs, doubling, at most a day. */
  const refusalWait = (n: number) => Math.min(DAY_MS, refusedRetryMs * 2 ** Math.min(n - 1, 20));

  /**
   * Embeds the texts; when the model refuses them for what they are, splits them in halves until each
   * refused text stands alone, so one bad text costs ~2·log2(batch) calls and its neighbours still
   * get their vectors. Any other failure is thrown as it is.
   */
  async function embedIsolating(items: { row: Pending; texts: string[] }[], priority: 'query' | 'bulk'): Promise<{
    embedded: { row: Pending; vectors: Float32Array[] }[];
    refused: { row: Pending; error: unknown }[];
  }> {
    if (items.length === 0) return { embedded: [], refused: [] };
    try {
      const vectors = await o.embedder.embed(items.flatMap((i) => i.texts), { priority });
      let at = 0;
      return {
        embedded: items.map((i) => {
          const mine = vectors.slice(at, at + i.texts.length);
          at += i.texts.length;
          return { row: i.row, vectors: mine };
        }),
        refused: [],
      };
    } catch (error) {
      if (!blamesInput(error)) throw error;
      if (items.length === 1) return { embedded: [], refused: [{ row: items[0].row, error }] };
      const half = Math.ceil(items.length / 2);
      const a = await embedIsolating(items.slice(0, half), priority);
      const b = await embedIsolating(items.slice(half), priority);
      return { embedded: [...a.embedded, ...b.embedded], refused: [...a.refused, ...b.refused] };
    }
  }

  /** Rows not waiting out a refusal. */
  const ready = () => o.db.selectFrom('vector_outbox').select(PENDING)
    .where((eb) => eb.or([eb('not_before', 'is', null), eb('not_before', '<=', o.clock.now())]));

  async function processGrouped(rows: Pending[]): Promise<number> {
    const groups = new Map<string, Pending[]>();
    for (const r of rows) {
      const k = `${r.collection}\u001f${r.owner_id}`;
      groups.set(k, [...(groups.get(k) ?? []), r]);
    }
    for (const g of groups.values()) await process(g[0].collection, g[0].owner_id, g);
    return rows.length;
  }

  /**
   * One background step: up to `parallel` batches embedded side by side. Fair across owners: the
   * owners with ready rows (at most 64, those waiting longest first) share the step's slots evenly,
   * each giving its oldest rows, so one owner's bulk load does not hold up another's fresh write
   * behind thousands of rows.
   */
  const step = () => serial(async () => {
    const slots = o.batchSize * parallel * STEP_BATCHES_PER_LANE;
    const owners = await ready().clearSelect().select(['collection', 'owner_id'])
      .select((eb) => eb.fn.min('enqueued_at').as('oldest'))
      .groupBy(['collection', 'owner_id']).orderBy('oldest').limit(64).execute();
    if (owners.length === 0) return 0;
    const share = Math.max(1, Math.floor(slots / owners.length));
    const rows: Pending[] = [];
    for (const w of owners.slice(0, slots)) {
      rows.push(...await ready().where('collection', '=', w.collection).where('owner_id', '=', w.owner_id)
        .orderBy('enqueued_at').limit(share).execute());
    }
    // Batches of at most batchSize rows of one (collection, owner), `parallel` at a time.
    const batches: Pending[][] = [];
    const groups = new Map<string, Pending[]>();
    for (const r of rows) {
      const k = `${r.collection}\u001f${r.owner_id}`;
      groups.set(k, [...(groups.get(k) ?? []), r]);
    }
    for (const g of groups.values()) for (let i = 0; i < g.length; i += o.batchSize) batches.push(g.slice(i, i + o.batchSize));
    // A lane starts embedding its next batch before it stores the one just embedded, so its thread
    // is not idle while the main thread writes. After a failure (the model away or hanging) or a
    // stop(), no lane takes another batch: the step ends after the batches under way, not after all.
    let next = 0;
    let taken = 0;
    let failed = false;
    const take = () => {
      const b = failed || stopped ? undefined : batches[next++];
      if (!b) return undefined;
      taken += b.length;
      const p = prepare(b[0]!.collection, b[0]!.owner_id, b, 'bulk');
      p.catch(() => {}); // awaited below; a lane that fails first must not leave it unhandled
      return p;
    };
    const lane = async () => {
      try {
        let embedding = take();
        while (embedding) {
          const done = await embedding;
          embedding = take();
          await store(done);
        }
      } catch (e) {
        failed = true;
        throw e;
      }
    };
    // Every lane ends before the step does (batches not stored are picked up again by a later step).
    const ended = await Promise.allSettled(Array.from({ length: Math.min(parallel, batches.length) }, lane));
    const failure = ended.find((e) => e.status === 'rejected');
    if (failure) throw failure.reason;
    return taken;
  });

  return {
    addSource(collection: string, source: TextSource, options: SourceOptions = {}): void {
      sources[collection] = source;
      if (options.windowWords) windowing[collection] = options.windowWords;
      else delete windowing[collection];
    },

    async enqueue(q: Queryable, collection: string, ownerId: string, itemIds: string[]): Promise<void> {
      const now = o.clock.now();
      for (const itemId of itemIds) await enqueueQ({ collection, owner: ownerId, item: itemId, ticket: randomUUID(), now }, q);
    },

    /** The items are gone: drop their vectors and anything pending for them, in the caller's transaction. */
    async forget(q: Queryable, collection: string, ownerId: string, itemIds: string[]): Promise<void> {
      if (itemIds.length === 0) return;
      await q.deleteFrom('vector_outbox').where('collection', '=', collection).where('owner_id', '=', ownerId).where('item_id', 'in', itemIds).execute();
      await o.index.remove(collection, ownerId, itemIds.flatMap(allChunkIds), q);
    },

    /**
     * Embeds this owner's pending items now (newest first, at most drainMax). Each batch takes its own
     * turn on the chain, so another owner's search (or the background loop) waits for one batch of
     * this one, not for all of it: a first search after a large parse no longer holds up every agent.
     */
    async drain(collection: string, ownerId: string): Promise<number> {
      let done = 0;
      while (done < drainMax) {
        const n = await serial(async () => {
          const rows = await ready().where('collection', '=', collection).where('owner_id', '=', ownerId)
            .orderBy('enqueued_at', 'desc').limit(Math.min(o.batchSize, drainMax - done)).execute();
          return rows.length === 0 ? 0 : processGrouped(rows);
        });
        if (n === 0) break;
        done += n;
      }
      return done;
    },

    /**
     * What a search does instead of waiting for the backlog: embeds this owner's `max` newest ready
     * items at query priority (ahead of background batches) and stores their vectors, waiting at
     * most `budgetMs` after `after` settles. Past the budget the work goes on in the background and the search answers
     * without it. Off the chain: it never waits for a background batch. Returns the items embedded
     * in time (0 when none were pending).
     */
    async catchUp(collection: string, ownerId: string, max: number, budgetMs: number, after?: Promise<unknown>): Promise<{ embedded: number; inTime: boolean }> {
      const rows = await ready().where('collection', '=', collection).where('owner_id', '=', ownerId)
        .orderBy('enqueued_at', 'desc').limit(max).execute();
      if (rows.length === 0) return { embedded: 0, inTime: true };
      const work = process(collection, ownerId, rows, 'query').then(() => true);
      work.catch((e) => o.log?.('vector indexing of a searcher\'s newest items failed', e));
      let timer: NodeJS.Timeout | undefined;
      // The budget runs from `after` (the query's own embedding, which a cold model also waits for).
      const late = Promise.resolve(after).catch(() => undefined)
        .then(() => new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), budgetMs); }));
      try {
        const inTime = await Promise.race([work, late]);
        return { embedded: inTime ? rows.length : 0, inTime };
      } finally {
        clearTimeout(timer);
      }
    },

    /** Items of this owner waiting to be embedded (set-aside ones included): not yet found by meaning. */
    async pending(collection: string, ownerId: string): Promise<number> {
      const r = await o.db.selectFrom('vector_outbox').select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('collection', '=', collection).where('owner_id', '=', ownerId).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** Queues items whose vector is missing or from another model, `list` giving them in chunks. */
    async enqueueStale(collection: string, list: (modelId: string, limit: number) => Promise<{ ownerId: string; itemId: string }[]>): Promise<number> {
      let total = 0;
      for (;;) {
        const items = await list(o.embedder.modelId, 1000);
        if (items.length === 0) return total;
        await o.db.transaction().execute(async (trx) => {
          for (const it of items) await this.enqueue(trx, collection, it.ownerId, [it.itemId]);
        });
        total += items.length;
      }
    },

    /** Works through the outbox until it is empty (tests, benchmarks). */
    async flush(): Promise<void> {
      while ((await step()) > 0) { /* next batch */ }
    },

    start(): void {
      if (timer || stopped) return;
      let failures = 0;
      let started = false;
      const tick = async () => {
        timer = undefined;
        let n = 0;
        try {
          if (!started) {
            // Refused items are tried again at once after a start (the operator may have fixed the model).
            const r = await o.db.updateTable('vector_outbox').set({ not_before: null }).where('not_before', 'is not', null).executeTakeFirst();
            started = true;
            const n = Number(r.numUpdatedRows);
            if (n > 0) o.log?.(`vector indexing: ${n} item(s) whose text the model refused before are tried again now`);
          }
          n = await step();
          failures = 0;
        } catch (e) {
          // Embedder or database away: back off (up to a minute) rather than log every interval.
          if (failures++ === 0) o.log?.('vector indexing failed; retrying with backoff', e);
        }
        if (!stopped) {
          const delay = failures > 0 ? Math.min(60_000, o.intervalMs * 2 ** failures) : n > 0 ? 0 : o.intervalMs;
          timer = setTimeout(() => void tick(), delay); // tick catches its own failures
          timer.unref();
        }
      };
      timer = setTimeout(() => void tick(), o.intervalMs);
      timer.unref();
    },

    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await chain;
    },
  };
}

/**
 * What waits in the outbox, for the operator (GET /admin/vectors): per collection, items to be
 * embedded (`pending`) and items whose text the model refused, waiting out their retry time
 * (`set_aside`), and up to `listMax` of the latter, the most refused first. Read from the table, so
 * it also shows rows left from a time the service ran with an embedder.
 */
export async function readBacklog(db: Kysely<Database>, now: number, listMax = 100): Promise<Backlog> {
  const waiting = (eb: ExpressionBuilder<Database, 'vector_outbox'>) => eb.and([eb('not_before', 'is not', null), eb('not_before', '>', now)]);
  const rows = await db.selectFrom('vector_outbox')
    .select((eb) => [
      'collection',
      eb.fn.countAll<number | string>().as('total'),
      eb.fn.sum<number | string>(eb.case().when(waiting(eb)).then(1).else(0).end()).as('set_aside'),
      eb.fn.min<number | string | null>(eb.case().when(waiting(eb)).then(null).else(eb.ref('enqueued_at')).end()).as('oldest_pending'),
      eb.fn.min<number | string | null>(eb.case().when(waiting(eb)).then(eb.ref('not_before')).else(null).end()).as('next_retry'),
    ])
    .groupBy('collection').orderBy('collection').execute();
  const items = await db.selectFrom('vector_outbox').select(['collection', 'owner_id', 'item_id', 'attempts', 'not_before'])
    .where(waiting).orderBy('attempts', 'desc').orderBy('not_before').orderBy('item_id').limit(listMax).execute();
  const at = (ms: number | string | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
  return {
    collections: rows.map((r) => ({
      collection: r.collection,
      pending: Number(r.total) - Number(r.set_aside ?? 0),
      set_aside: Number(r.set_aside ?? 0),
      oldest_pending_at: at(r.oldest_pending),
      next_retry_at: at(r.next_retry),
    })),
    set_aside_items: items.map((r) => ({
      collection: r.collection, owner_id: r.owner_id, item_id: r.item_id, refusals: r.attempts, retry_at: at(r.not_before),
    })),
  };
}

export type VectorIndexer = ReturnType<typeof createVectorIndexer>;
