/**
 * The SQL side of an activity source's page: the rows of a table (`created_at`, an id column) that
 * come after the feed's cursor, newest first. One definition for every source's store.
 */
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { ActivityBound } from './activity-types';

/** `created_at` before the bound; at exactly the bound, all rows, none, or those with a smaller id. */
export function beforeBound(idColumn: string, before: ActivityBound): RawBuilder<SqlBool> {
  const { at, sameAt } = before;
  if (sameAt === 'all') return sql<SqlBool>`created_at <= ${at}`;
  if (sameAt === 'none') return sql<SqlBool>`created_at < ${at}`;
  return sql<SqlBool>`(created_at < ${at} or (created_at = ${at} and ${sql.ref(idColumn)} < ${sameAt.idBelow}))`;
}
