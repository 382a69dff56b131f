/**
 * SQLite: the FTS5 table of the lexical index, written behind its items' transactions.
 *
 * FTS5 turns the terms written in a transaction into a new on-disk segment at COMMIT, merges
 * segments as they pile up, and deletes a replaced row through a tombstone in the segment holding
 * it: most of that cost comes once per transaction, not per row. Written in each memory write's own
 * transaction (a group commit holds a handful), it took about a fifth of a durable PUT's throughput
 * when every write changed its text (bench/versus.ts). So a write stores its item's terms in the
 * item's `lexical_docs` row (`pending_terms`, migration 0108), in its own transaction (durable with
 * it, visible at once; the row is written anyway), and they move into FTS5 in batches of up to
 * FLUSH_BATCH, by ascending rowid, in transactions of their own: once FLUSH_AT items are waiting, or
 * FLUSH_AFTER_MS after the first. `in_fts` says whether FTS5 holds a row of the item to replace.
 *
 * A search reads the owner's waiting items beside FTS5 (`of`): it leaves out FTS5's stale rows of
 * those items and scores the waiting ones itself with the same BM25 (index.ts). Items a crash left
 * waiting are moved by the next flush (one is started with the index).
 */
import type SQLite from 'better-sqlite3';
import type { Kysely, Transaction } from 'kysely';
import type { CommitSync } from '../db/commit-sync';
import { prepared } from '../db/prepared';
import type { Database } from '../db/schema';
import type { Queryable } from '../vectors/types';

/** Waiting items that start a flush at once; fewer are flushed FLUSH_AFTER_MS after the first. */
export const FLUSH_AT = 256;
export const FLUSH_AFTER_MS = 200;
/** Items moved into FTS5 per transaction. */
export const FLUSH_BATCH = 1024;

export interface PendingDoc {
  id: number;
  item_id: string;
  doc_len: number;
  /** The item's terms as FTS5 is given them: tagged terms separated by spaces, each repeated tf times. */
  terms: string;
}

// Sentinels of the compiled statements (prepared.ts): values no real call uses.
const P = { collection: '\u0000collection', owner: '\u0000owner' };

export class PendingTerms {
  private readonly ofOwner;
  private fts?: { next: SQLite.Statement; drop: SQLite.Statement; insert: SQLite.Statement; done: SQLite.Statement };
  /** Writes since the last flush started. */
  private writes = 0;
  private timer?: NodeJS.Timeout;
  private soon = false;
  private running?: Promise<void>;

  constructor(
    db: Kysely<Database>,
    private readonly sqlite: SQLite.Database,
    private readonly runTransaction: <T>(fn: (trx: Transaction<Database>) => Promise<T>) => Promise<T>,
  ) {
    this.ofOwner = prepared(db, P, (p) => db.selectFrom('lexical_docs').select(['id', 'item_id', 'doc_len', 'pending_terms'])
      .where('collection', '=', p.collection).where('owner_id', '=', p.owner).where('pending_terms', 'is not', null), sqlite);
    // Items a crash left waiting.
    this.schedule();
  }

  /** An item's terms were stored to wait (index.ts, in the writer's transaction): a flush is due. */
  noteWrite(): void {
    this.writes++;
    this.schedule();
  }

  /** Of items removed in the caller's transaction, those whose FTS5 row is to be deleted. */
  async inFts(q: Queryable, ids: number[]): Promise<number[]> {
    const rows = await q.selectFrom('lexical_docs').select('id').where('id', 'in', ids).where('in_fts', '=', 1).execute();
    return rows.map((r) => Number(r.id));
  }

  /** The owner's items whose terms wait (committed rows). */
  async of(collection: string, ownerId: string): Promise<PendingDoc[]> {
    return (await this.ofOwner({ collection, owner: ownerId }))
      .map((r) => ({ id: Number(r.id), item_id: r.item_id, doc_len: Number(r.doc_len), terms: r.pending_terms! }));
  }

  /** Moves every waiting item into FTS5; resolves when none is left (one flush at a time). */
  flush(): Promise<void> {
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
      if (this.writes > 0) this.schedule();
    });
    return this.running;
  }

  private schedule(): void {
    if (this.running || !this.sqlite.open) return;
    if (this.writes >= FLUSH_AT) {
      if (!this.soon) {
        this.soon = true;
        setImmediate(this.start);
      }
    } else {
      this.timer ??= setTimeout(this.start, FLUSH_AFTER_MS).unref();
    }
  }

  /** Starts a flush (one function for every timer: schedule() runs on every write). */
  private readonly start = (): void => {
    this.soon = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    // A failed flush (the database closed under it, a disk error) leaves the rows for the next one.
    this.flush().catch(() => {});
  };

  private async drain(): Promise<void> {
    while (this.sqlite.open) {
      this.writes = 0;
      const moved = await this.runTransaction(async () => this.moveBatch());
      if (moved < FLUSH_BATCH) return;
    }
  }

  /** One batch, inside the flush's transaction (which holds the connection): synchronous, nothing runs between. */
  private moveBatch(): number {
    this.fts ??= {
      // Through the partial index, any FLUSH_BATCH of them (sorted below): ordered by id, SQLite walked the table.
      next: this.sqlite.prepare('select id, pending_terms as terms, in_fts from lexical_docs indexed by lexical_docs_pending_idx where pending_terms is not null limit ?'),
      drop: this.sqlite.prepare('delete from lexical_fts where rowid = ?'),
      insert: this.sqlite.prepare('insert into lexical_fts(rowid, terms) values (?, ?)'),
      done: this.sqlite.prepare('update lexical_docs set pending_terms = null, in_fts = 1 where id = ?'),
    };
    const rows = (this.fts.next.all(FLUSH_BATCH) as { id: number; terms: string; in_fts: number }[]).sort((a, b) => a.id - b.id);
    if (rows.length === 0) return 0;
    // Deletes first, then inserts, each by ascending rowid: FTS5 keeps a transaction's terms in one
    // segment while rowids only grow.
    for (const r of rows) if (r.in_fts === 1) this.fts.drop.run(r.id);
    for (const r of rows) this.fts.insert.run(r.id, r.terms);
    for (const r of rows) this.fts.done.run(r.id);
    return rows.length;
  }
}

/** The transaction a flush runs in: one whose COMMIT does not wait for the disk (the rows it moves are already durable). */
export function flushTransaction(db: Kysely<Database>, commits?: Pick<CommitSync, 'transaction'>) {
  return <T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> => (commits ? commits.transaction(fn) : db.transaction().execute(fn));
}
