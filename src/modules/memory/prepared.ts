/**
 * Compile a hot query once. Kysely builds and compiles every query on every call, which costs more
 * CPU than SQLite takes to answer a key lookup; here the query is built once with sentinel values,
 * and each call only substitutes the real values into the compiled parameter list (same SQL text,
 * so the driver and the database see exactly what the builder would produce).
 */
import { CompiledQuery, type Compilable, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';

export function prepared<S extends Record<string, string | number>, R>(
  db: Kysely<Database>,
  sentinels: S,
  build: (s: S) => Compilable<R>,
): (values: { [K in keyof S]: S[K] extends number ? number | null : string | null }, q?: Kysely<Database> | Transaction<Database>) => Promise<R[]> {
  const compiled = build(sentinels).compile();
  const names = Object.keys(sentinels) as (keyof S)[];
  // Each parameter is either a sentinel (replaced per call) or a constant of the query ('live').
  const slots = compiled.parameters.map((p) => ({ name: names.find((n) => sentinels[n] === p), constant: p }));
  return async (values, q = db) => {
    const params = slots.map((s) => (s.name === undefined ? s.constant : values[s.name]));
    return (await q.executeQuery<R>(CompiledQuery.raw(compiled.sql, params))).rows;
  };
}
