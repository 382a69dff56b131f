/**
 * Compile a hot query once. Kysely builds and compiles every query on every call, which costs more
 * CPU than SQLite takes to answer a key lookup; here the query is built once with sentinel values,
 * and each call only substitutes the real values into the compiled parameter list (same SQL text,
 * so the driver and the database see exactly what the builder would produce).
 */
import type SQLite from 'better-sqlite3';
import { CompiledQuery, type Compilable, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema';

export function prepared<S extends Record<string, string | number>, R>(
  db: Kysely<Database>,
  sentinels: S,
  build: (s: S) => Compilable<R>,
  /**
   * SQLite only: run the statement straight on the better-sqlite3 connection, skipping Kysely's
   * per-query connection hand-off (~10 µs).
   * - Called with a transaction (`q`): svc has a single SQLite connection and the caller's open
   *   transaction holds it, so the statement runs inside that transaction, exactly as through Kysely.
   *   Reads and writes alike.
   * - Called without `q` (reads only): straight on the connection only while no transaction is open
   *   on it, so the read sees committed data only; while one is open (a write batch in flight) it
   *   goes through Kysely, which waits for that transaction to end, as any other read does.
   */
  direct?: SQLite.Database,
  // Values left out bind as null.
): (values: { [K in keyof S]?: S[K] extends number ? number | null : string | null }, q?: Kysely<Database> | Transaction<Database>) => Promise<R[]> {
  const compiled = build(sentinels).compile();
  const names = Object.keys(sentinels) as (keyof S)[];
  // Each parameter is either a sentinel (replaced per call) or a constant of the query ('live').
  const slots = compiled.parameters.map((p) => ({ name: names.find((n) => sentinels[n] === p), constant: p }));
  const stmt = direct?.prepare(compiled.sql);
  return async (values, q) => {
    const params = slots.map((s) => (s.name === undefined ? s.constant : values[s.name] ?? null));
    if (stmt && (q === undefined ? !direct!.inTransaction : q.isTransaction)) {
      if (stmt.reader) return stmt.all(params) as R[];
      stmt.run(params);
      return [];
    }
    return (await (q ?? db).executeQuery<R>(CompiledQuery.raw(compiled.sql, params))).rows;
  };
}
