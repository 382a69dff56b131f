/**
 * A VectorIndex over `vector_items` plus an optional accelerator that mirrors each row by id,
 * partitioned by (collection, owner, model): resident codes in this process (SQLite) or a
 * per-dimension pgvector table (PostgreSQL).
 * Without an accelerator, queries scan the owner's vectors exactly in this process.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock';
import type { Database } from '../db/schema';
import { countStale, deleteItems, idsOf, scanItems, topK, upsertItem } from './items';
import { partitionOf, type Queryable, type VectorHit, type VectorIndex, type VectorQuery, type VectorRecord } from './types';

export interface Accelerator {
  readonly kind: 'resident' | 'pgvector';
  put(q: Queryable, id: number, partition: string, vector: Float32Array): Promise<void>;
  /** Row ids of vectors of one owner's collection, about to be deleted. */
  drop(q: Queryable, ids: number[], collection: string, ownerId: string): Promise<void>;
  knn(q: Queryable, partition: string, vector: Float32Array, limit: number): Promise<VectorHit[]>;
}

export class AcceleratedVectorIndex implements VectorIndex {
  readonly kind: VectorIndex['kind'];

  constructor(private readonly db: Kysely<Database>, private readonly clock: Clock, private readonly acc?: Accelerator) {
    this.kind = acc?.kind ?? 'exact';
  }

  /** Runs `fn` in the caller's transaction, or a new one. */
  private within<T>(q: Queryable | undefined, fn: (q: Queryable) => Promise<T>): Promise<T> {
    const base = q ?? this.db;
    return base.isTransaction ? fn(base) : (base as Kysely<Database>).transaction().execute(fn);
  }

  upsert(records: VectorRecord[], q?: Queryable): Promise<number> {
    if (records.length === 0) return Promise.resolve(0);
    return this.within(q, async (trx) => {
      let stored = 0;
      for (const r of records) {
        const id = await upsertItem(trx, r, this.clock);
        if (id === undefined) continue;
        stored++;
        if (this.acc) await this.acc.put(trx, id, partitionOf(r.collection, r.ownerId, r.modelId), r.vector);
      }
      return stored;
    });
  }

  remove(collection: string, ownerId: string, itemIds: string[], q?: Queryable): Promise<void> {
    if (itemIds.length === 0) return Promise.resolve();
    return this.within(q, async (trx) => {
      const ids = await idsOf(trx, collection, ownerId, itemIds);
      if (this.acc) await this.acc.drop(trx, ids, collection, ownerId);
      await deleteItems(trx, ids);
    });
  }

  async query(q: VectorQuery): Promise<VectorHit[]> {
    if (this.acc) return this.acc.knn(this.db, partitionOf(q.collection, q.ownerId, q.modelId), q.vector, q.limit);
    return topK(q.vector, await scanItems(this.db, q.collection, q.ownerId, q.modelId), q.limit);
  }

  countStale(collection: string, modelId: string): Promise<number> {
    return countStale(this.db, collection, modelId);
  }
}
