/**
 * sqlite-vec accelerator: one `vec0` virtual table per dimension (`vec_bits_<dims>`) holding the sign
 * bits of each vector, partition key = (collection, owner, model), so a KNN query only reads one
 * owner's vectors of the current model. A query takes the nearest candidates by Hamming distance and
 * re-ranks them by exact cosine on the float32 vectors of `vector_items`: a 32× smaller scan than
 * float vectors, exact scores for what is returned. Rowids are `vector_items.id`; a new table is
 * filled from `vector_items` when it is created.
 *
 * How many candidates: 20 per result wanted, at least 2,000, and at least a 24th of the partition
 * (at most 4,096, sqlite-vec's limit). Sign bits are a coarse view of a vector: the true top 20 of
 * 100,000 is not all among the nearest few hundred by Hamming distance. Measured
 * (bench/retrieval/vector-exactness.ts, vectors made from the local model's embeddings): top-20
 * overlap with an exact scan 84 % with 400 candidates at 100,000 vectors, 97.7 % with 2,000, 99.2 %
 * with 4,096; 94.7 % with 400 and 99.9 % with 2,000 at 10,000. The partition's size is counted at
 * most once a minute per partition.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import * as sqliteVec from 'sqlite-vec';
import type { Accelerator } from './accelerated';
import { topK } from './items';
import { fromBytes, toBytes, VectorIndexError, type Queryable, type VectorHit } from './types';

// Binary-quantized mirror: 1 bit per dimension (64 bytes for 512-d), scanned by Hamming distance,
// then the best candidates are re-scored exactly with their float32 vectors from vector_items.
const tableOf = (dims: number) => `vec_bits_${dims}`;
/** Candidates fetched by Hamming distance per result wanted, at least MIN_CANDIDATES and a share of the partition. */
const OVERSAMPLE = 20;
export const MIN_CANDIDATES = 2000;
const PARTITION_SHARE = 1 / 24;
const SIZE_TTL_MS = 60_000;
const MAX_SIZES = 10_000;
/** sqlite-vec answers at most 4,096 neighbours per KNN query. */
const MAX_CANDIDATES = 4096;

/** Loads the extension into the connection; throws VectorIndexError when it cannot. */
export function loadSqliteVec(conn: BetterSqlite3.Database): string {
  try {
    return (conn.prepare('select vec_version() as v').get() as { v: string }).v; // already loaded
  } catch {
    /* not yet */
  }
  try {
    sqliteVec.load(conn);
    return (conn.prepare('select vec_version() as v').get() as { v: string }).v;
  } catch (e) {
    throw new VectorIndexError(`sqlite-vec could not be loaded: ${(e as Error).message}`, { cause: e });
  }
}

export class SqliteVecAccelerator implements Accelerator {
  readonly kind = 'sqlite-vec' as const;
  private readonly tables = new Set<number>();
  /** Vectors per partition, counted at most once per SIZE_TTL_MS. */
  private readonly sizes = new Map<string, { n: number; at: number }>();

  constructor(conn: BetterSqlite3.Database) {
    const rows = conn.prepare("select name from sqlite_master where type = 'table' and name like 'vec_bits_%'").all() as { name: string }[];
    for (const r of rows) {
      const m = /^vec_bits_(\d+)$/.exec(r.name);
      if (m) this.tables.add(Number(m[1]));
    }
  }

  private async ensure(q: Queryable, dims: number): Promise<void> {
    if (this.tables.has(dims)) return;
    const t = tableOf(dims);
    await sql.raw(`create virtual table if not exists ${t} using vec0(part text partition key, embedding bit[${dims}])`).execute(q);
    // Vectors stored before this table existed (another accelerator, an older layout) join it now.
    // Row by row: a bit vector's type tag does not survive INSERT ... SELECT.
    const { rows } = await sql<{ id: number; part: string; embedding: Uint8Array }>`
      select id, collection || char(31) || owner_id || char(31) || model_id as part, embedding from vector_items
      where dimensions = ${dims} and id not in (select rowid from ${sql.table(t)})`.execute(q);
    for (const r of rows) {
      await sql`insert into ${sql.table(t)}(rowid, part, embedding) values (${BigInt(r.id)}, ${r.part}, vec_quantize_binary(vec_f32(${Buffer.from(r.embedding)})))`.execute(q);
    }
    this.tables.add(dims);
  }

  async put(q: Queryable, id: number, partition: string, vector: Float32Array): Promise<void> {
    await this.ensure(q, vector.length);
    const t = sql.table(tableOf(vector.length));
    // vec0 has no upsert; the row may exist under another partition (model change).
    await sql`delete from ${t} where rowid = ${BigInt(id)}`.execute(q);
    await sql`insert into ${t}(rowid, part, embedding) values (${BigInt(id)}, ${partition}, vec_quantize_binary(vec_f32(${toBytes(vector)})))`.execute(q);
  }

  async drop(q: Queryable, ids: number[]): Promise<void> {
    if (ids.length === 0) return;
    for (const dims of this.tables) {
      await sql`delete from ${sql.table(tableOf(dims))} where rowid in (${sql.join(ids.map((i) => BigInt(i)))})`.execute(q);
    }
  }

  /** Vectors in a partition (collection, owner, model), from the covering index of vector_items. */
  private async sizeOf(q: Queryable, partition: string): Promise<number> {
    const now = Date.now();
    const known = this.sizes.get(partition);
    if (known && now - known.at < SIZE_TTL_MS) return known.n;
    const [collection, owner, model] = partition.split('\u001f');
    const row = await q.selectFrom('vector_items').select((e) => e.fn.countAll().as('n'))
      .where('collection', '=', collection!).where('owner_id', '=', owner!).where('model_id', '=', model!).executeTakeFirst();
    if (this.sizes.size >= MAX_SIZES) this.sizes.clear();
    const n = Number(row?.n ?? 0);
    this.sizes.set(partition, { n, at: now });
    return n;
  }

  async knn(q: Queryable, partition: string, vector: Float32Array, limit: number): Promise<VectorHit[]> {
    if (!this.tables.has(vector.length)) return [];
    const t = sql.table(tableOf(vector.length));
    const wanted = Math.max(MIN_CANDIDATES, limit * OVERSAMPLE);
    const candidates = Math.min(MAX_CANDIDATES, wanted >= MAX_CANDIDATES ? wanted : Math.max(wanted, Math.ceil((await this.sizeOf(q, partition)) * PARTITION_SHARE)));
    const { rows } = await sql<{ item_id: string; embedding: Uint8Array }>`
      select vi.item_id, vi.embedding from (
        select rowid from ${t} where embedding match vec_quantize_binary(vec_f32(${toBytes(vector)})) and k = ${BigInt(candidates)} and part = ${partition}
      ) k join vector_items vi on vi.id = k.rowid`.execute(q);
    return topK(vector, rows.map((r) => ({ itemId: r.item_id, vector: fromBytes(r.embedding) })), limit);
  }

}

/**
 * Loads sqlite-vec into a SQLite connection right after it is opened, before migrations: once a
 * vec0 table exists, any schema introspection (Kysely's migrator lists every table) needs the module.
 * Returns the error message when the extension cannot be loaded (search then scans exactly).
 */
export function loadVectorExtension(database: { engine: string; sqlite?: BetterSqlite3.Database }): string | undefined {
  if (database.engine !== 'sqlite' || !database.sqlite) return undefined;
  try {
    loadSqliteVec(database.sqlite);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
