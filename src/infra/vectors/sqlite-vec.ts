/**
 * sqlite-vec accelerator: one `vec0` virtual table per dimension (`vec_items_<dims>`), cosine
 * distance, partition key = (collection, owner, model), so a KNN query only reads one owner's
 * vectors of the current model. Rowids are `vector_items.id`.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import * as sqliteVec from 'sqlite-vec';
import type { Accelerator } from './accelerated';
import { toBytes, VectorIndexError, type Queryable, type VectorHit } from './types';

const tableOf = (dims: number) => `vec_items_${dims}`;

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

  constructor(conn: BetterSqlite3.Database) {
    const rows = conn.prepare("select name from sqlite_master where type = 'table' and name like 'vec_items_%'").all() as { name: string }[];
    for (const r of rows) {
      const m = /^vec_items_(\d+)$/.exec(r.name);
      if (m) this.tables.add(Number(m[1]));
    }
  }

  private async ensure(q: Queryable, dims: number): Promise<void> {
    if (this.tables.has(dims)) return;
    await sql.raw(`create virtual table if not exists ${tableOf(dims)} using vec0(part text partition key, embedding float[${dims}] distance_metric=cosine)`).execute(q);
    this.tables.add(dims);
  }

  async put(q: Queryable, id: number, partition: string, vector: Float32Array): Promise<void> {
    await this.ensure(q, vector.length);
    const t = sql.table(tableOf(vector.length));
    // vec0 has no upsert; the row may exist under another partition (model change).
    await sql`delete from ${t} where rowid = ${BigInt(id)}`.execute(q);
    await sql`insert into ${t}(rowid, part, embedding) values (${BigInt(id)}, ${partition}, ${toBytes(vector)})`.execute(q);
  }

  async drop(q: Queryable, ids: number[]): Promise<void> {
    if (ids.length === 0) return;
    for (const dims of this.tables) {
      await sql`delete from ${sql.table(tableOf(dims))} where rowid in (${sql.join(ids.map((i) => BigInt(i)))})`.execute(q);
    }
  }

  async knn(q: Queryable, partition: string, vector: Float32Array, limit: number): Promise<VectorHit[]> {
    if (!this.tables.has(vector.length)) return [];
    const t = sql.table(tableOf(vector.length));
    const { rows } = await sql<{ item_id: string; distance: number }>`
      select vi.item_id, k.distance from (
        select rowid, distance from ${t} where embedding match ${toBytes(vector)} and k = ${BigInt(limit)} and part = ${partition}
      ) k join vector_items vi on vi.id = k.rowid order by k.distance, vi.item_id`.execute(q);
    return rows.map((r) => ({ itemId: r.item_id, cosine: 1 - r.distance }));
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
