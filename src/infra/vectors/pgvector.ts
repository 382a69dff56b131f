/**
 * pgvector accelerator: one table per dimension (`vec_pg_<dims>`: id, part, embedding vector(dims))
 * with an HNSW index (vector_cosine_ops) and a btree on the partition. Queries run with
 * `hnsw.iterative_scan = strict_order` where pgvector supports it (0.8+), so filtering by owner
 * after the graph walk still returns `limit` rows; the planner may also pick the btree and sort
 * exactly for small owners.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema';
import type { Accelerator } from './accelerated';
import type { Queryable, VectorHit } from './types';

const tableOf = (dims: number) => `vec_pg_${dims}`;
/** HNSW on `vector` supports at most 2,000 dimensions; larger models are searched without it. */
const HNSW_MAX_DIMS = 2000;
const literal = (v: Float32Array) => `[${Array.from(v).join(',')}]`;

/** Creates the extension if it can; false when this PostgreSQL has no pgvector. */
export async function tryCreatePgvector(db: Kysely<Database>): Promise<boolean> {
  try {
    await sql`create extension if not exists vector`.execute(db);
    return true;
  } catch {
    return false;
  }
}

export class PgvectorAccelerator implements Accelerator {
  readonly kind = 'pgvector' as const;
  private readonly tables = new Set<number>();
  private iterative = true;

  static async open(db: Kysely<Database>): Promise<PgvectorAccelerator> {
    const acc = new PgvectorAccelerator();
    const { rows } = await sql<{ tablename: string }>`select tablename from pg_tables where tablename like 'vec_pg_%'`.execute(db);
    for (const r of rows) {
      const m = /^vec_pg_(\d+)$/.exec(r.tablename);
      if (m) acc.tables.add(Number(m[1]));
    }
    try {
      await db.transaction().execute(async (trx) => {
        await sql`set local hnsw.iterative_scan = strict_order`.execute(trx);
      });
    } catch {
      acc.iterative = false; // pgvector before 0.8
    }
    return acc;
  }

  private async ensure(q: Queryable, dims: number): Promise<void> {
    if (this.tables.has(dims)) return;
    const t = tableOf(dims);
    await sql.raw(`create table if not exists ${t} (id bigint primary key, part text not null, embedding vector(${dims}) not null)`).execute(q);
    await sql.raw(`create index if not exists ${t}_part_idx on ${t} (part)`).execute(q);
    if (dims <= HNSW_MAX_DIMS) {
      await sql.raw(`create index if not exists ${t}_hnsw_idx on ${t} using hnsw (embedding vector_cosine_ops)`).execute(q);
    }
    this.tables.add(dims);
  }

  async put(q: Queryable, id: number, partition: string, vector: Float32Array): Promise<void> {
    await this.ensure(q, vector.length);
    await sql`insert into ${sql.table(tableOf(vector.length))} (id, part, embedding) values (${id}, ${partition}, ${literal(vector)}::vector)
      on conflict (id) do update set part = excluded.part, embedding = excluded.embedding`.execute(q);
  }

  async drop(q: Queryable, ids: number[]): Promise<void> {
    if (ids.length === 0) return;
    for (const dims of this.tables) await sql`delete from ${sql.table(tableOf(dims))} where id in (${sql.join(ids)})`.execute(q);
  }

  async knn(q: Queryable, partition: string, vector: Float32Array, limit: number): Promise<VectorHit[]> {
    if (!this.tables.has(vector.length)) return [];
    const t = sql.table(tableOf(vector.length));
    const v = literal(vector);
    const run = async (x: Queryable) => (await sql<{ item_id: string; distance: number }>`
      select vi.item_id, p.embedding <=> ${v}::vector as distance from ${t} p join vector_items vi on vi.id = p.id
      where p.part = ${partition} order by p.embedding <=> ${v}::vector limit ${limit}`.execute(x)).rows;
    const rows = this.iterative
      ? await (q as Kysely<Database>).transaction().execute(async (trx) => {
          await sql`set local hnsw.iterative_scan = strict_order`.execute(trx);
          return run(trx);
        })
      : await run(q);
    return rows.map((r) => ({ itemId: r.item_id, cosine: 1 - Number(r.distance) }));
  }
}
