/**
 * The `vector_items` table: every vector, as float32 bytes, with its model and item version. Shared
 * by every VectorIndex implementation; accelerators mirror rows by `id`.
 */
import { sql } from 'kysely';
import type { Clock } from '../../lib/clock';
import { fromBytes, toBytes, type Queryable, type VectorRecord } from './types';

/** Stores one record unless a newer version (same model) is already there. Returns its row id, or undefined if skipped. */
export async function upsertItem(q: Queryable, r: VectorRecord, clock: Clock): Promise<number | undefined> {
  const row = await q.insertInto('vector_items').values({
    collection: r.collection, owner_id: r.ownerId, item_id: r.itemId, model_id: r.modelId, item_version: r.itemVersion,
    dimensions: r.vector.length, embedding: toBytes(r.vector), updated_at: clock.now(),
  } as never).onConflict((oc) => oc.columns(['collection', 'owner_id', 'item_id']).doUpdateSet({
    model_id: r.modelId, item_version: r.itemVersion, dimensions: r.vector.length, embedding: toBytes(r.vector), updated_at: clock.now(),
  } as never).where((eb) => eb.or([
    eb('vector_items.item_version', '<=', r.itemVersion),
    eb('vector_items.model_id', '<>', r.modelId),
  ]))).returning('id').executeTakeFirst();
  return row ? Number(row.id) : undefined;
}

export async function idsOf(q: Queryable, collection: string, ownerId: string, itemIds: string[]): Promise<number[]> {
  if (itemIds.length === 0) return [];
  const rows = await q.selectFrom('vector_items').select('id')
    .where('collection', '=', collection).where('owner_id', '=', ownerId).where('item_id', 'in', itemIds).execute();
  return rows.map((r) => Number(r.id));
}

export async function deleteItems(q: Queryable, ids: number[]): Promise<void> {
  if (ids.length) await q.deleteFrom('vector_items').where('id', 'in', ids).execute();
}

export async function scanItems(q: Queryable, collection: string, ownerId: string, modelId: string) {
  const rows = await q.selectFrom('vector_items').select(['id', 'item_id', 'embedding'])
    .where('collection', '=', collection).where('owner_id', '=', ownerId).where('model_id', '=', modelId).execute();
  return rows.map((r) => ({ id: Number(r.id), itemId: r.item_id, vector: fromBytes(r.embedding) }));
}

export async function countStale(q: Queryable, collection: string, modelId: string): Promise<number> {
  const row = await q.selectFrom('vector_items').select(sql<number>`count(*)`.as('n'))
    .where('collection', '=', collection).where('model_id', '<>', modelId).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Top `limit` by dot product (vectors are unit length, so this is cosine). */
export function topK(query: Float32Array, items: { itemId: string; vector: Float32Array }[], limit: number) {
  const scored = items.map((it) => {
    let dot = 0;
    const v = it.vector;
    for (let i = 0; i < v.length; i++) dot += v[i] * query[i];
    return { itemId: it.itemId, cosine: dot };
  });
  scored.sort((a, b) => b.cosine - a.cosine || (a.itemId < b.itemId ? -1 : 1));
  return scored.slice(0, limit);
}
