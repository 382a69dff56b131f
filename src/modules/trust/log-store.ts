/**
 * SQL of the trust log: entries, complete-subtree hashes, the head row appends lock, checkpoints
 * and the log's signing key. The Merkle arithmetic lives in infra/tlog; this file only stores and
 * reads its nodes.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Engine } from '../../infra/db/dialect';
import type { NodeReader, StoredNode } from '../../infra/tlog/merkle';
import type { TrustLogEntriesTable } from '../../infra/db/tables/trust';

type Db = Kysely<Database> | Transaction<Database>;

/** Batched reads of complete-subtree hashes, in the order asked; a missing node is a corrupt log. */
export function nodeReader(db: Db): NodeReader {
  return async (nodes) => {
    if (nodes.length === 0) return [];
    const rows = await db.selectFrom('trust_log_nodes').select(['level', 'idx', 'hash'])
      .where((eb) => eb.or(nodes.map((n) => eb.and([eb('level', '=', n.level), eb('idx', '=', n.index)]))))
      .execute();
    const byKey = new Map(rows.map((r) => [`${r.level}/${Number(r.idx)}`, r.hash]));
    return nodes.map((n) => {
      const hash = byKey.get(`${n.level}/${n.index}`);
      if (hash === undefined) throw new Error(`trust log node ${n.level}/${n.index} is missing`);
      return Buffer.from(hash, 'hex');
    });
  };
}

export function createTrustLogStore(db: Kysely<Database>, engine: Engine) {
  return {
    db,
    /** The tree size, locked for this transaction (PostgreSQL row lock; SQLite has one writer). */
    async lockHead(trx: Transaction<Database>): Promise<number> {
      let q = trx.selectFrom('trust_log_head').select('size').where('id', '=', 1);
      if (engine === 'postgres') q = q.forUpdate();
      const row = await q.executeTakeFirstOrThrow();
      return Number(row.size);
    },

    /** Writes appended entries, the subtree nodes they completed and the head's new size. */
    async writeAppends(trx: Transaction<Database>, entries: TrustLogEntriesTable[], nodes: StoredNode[], size: number): Promise<void> {
      if (entries.length === 0) return;
      // Chunks keep each statement under SQLite's bound-parameter limit.
      for (let i = 0; i < entries.length; i += 100) await trx.insertInto('trust_log_entries').values(entries.slice(i, i + 100)).execute();
      const rows = nodes.map((n) => ({ level: n.level, idx: n.index, hash: n.hash.toString('hex') }));
      for (let i = 0; i < rows.length; i += 300) await trx.insertInto('trust_log_nodes').values(rows.slice(i, i + 300)).execute();
      await trx.updateTable('trust_log_head').set({ size }).where('id', '=', 1).execute();
    },

    async size(trx: Db = db): Promise<number> {
      const row = await trx.selectFrom('trust_log_head').select('size').where('id', '=', 1).executeTakeFirstOrThrow();
      return Number(row.size);
    },

    /** Entries [start, end) in index order. */
    entries(start: number, end: number, trx: Db = db) {
      return trx.selectFrom('trust_log_entries').selectAll().where('log_index', '>=', start).where('log_index', '<', end)
        .orderBy('log_index').execute();
    },

    entry(index: number) {
      return db.selectFrom('trust_log_entries').selectAll().where('log_index', '=', index).executeTakeFirst();
    },

    latestCheckpoint() {
      return db.selectFrom('trust_log_checkpoints').selectAll().orderBy('tree_size', 'desc').limit(1).executeTakeFirst();
    },

    async saveCheckpoint(row: { tree_size: number; root_hash: string; note: string; signed_at: number }): Promise<void> {
      await db.insertInto('trust_log_checkpoints').values(row).onConflict((oc) => oc.column('tree_size').doNothing()).execute();
    },

    /** The stored signing key, created by the first instance to start (the others read the winner's). */
    async signingKey(generate: () => string, now: number): Promise<string> {
      await db.insertInto('trust_log_keys').values({ id: 1, private_key_pem: generate(), created_at: now })
        .onConflict((oc) => oc.column('id').doNothing()).execute();
      const row = await db.selectFrom('trust_log_keys').select('private_key_pem').where('id', '=', 1).executeTakeFirstOrThrow();
      return row.private_key_pem;
    },
  };
}

export type TrustLogStore = ReturnType<typeof createTrustLogStore>;
