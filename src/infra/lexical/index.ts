/**
 * Lexical (full-text) index shared by memory, commons and blob search: BM25 over the terms of
 * `tokenize()` (tokens.ts), scoped by (collection, owner), written in the item's own transaction so
 * a search right after a write finds it by its words. Design and measurements: docs/memory.md,
 * "Hybrid search".
 *
 * - Every term is stored prefixed with an 8-character tag of (collection, owner), so the engine's
 *   posting list of a term holds one owner's items only: a query reads nothing of other owners.
 * - SQLite: a contentless FTS5 table (`lexical_fts`, rowid = lexical_docs.id) ranked by FTS5's
 *   built-in bm25() (k1 = 1.2, b = 0.75). FTS5 takes N and the average length over the whole table.
 *   The write's transaction stores the terms in the item's row, one upsert (triggers keep
 *   lexical_stats, migration 0109); they move into FTS5 in batches, and a search scores the items
 *   still waiting from their rows with the same formula (pending.ts).
 * - PostgreSQL: a `tsvector` column written directly as lexemes with positions 1..tf (no parser, no
 *   stemming dictionary: the same terms as on SQLite), a GIN index, and the same BM25 formula
 *   computed here over the matching postings, with the owner's N and average length (lexical_stats).
 *   On one owner's data the two engines rank alike (bench/retrieval: same top 10).
 * - `match` in 0..1 is the BM25 score over the sum of the query terms' IDFs: about 1 when a document
 *   holds every query term once at average length, less when it misses the rarer ones.
 * - Each item's row keeps a hash of the text it was indexed from (`text_hash`): a put of the same
 *   text again (a value written twice, a retried write) changes nothing and says so.
 */
import { createHash, hash } from 'node:crypto';
import type SQLite from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import { prepared, preparedWrite } from '../db/prepared';
import type { CommitSync } from '../db/commit-sync';
import type { Database } from '../db/schema';
import type { Queryable } from '../vectors/types';
import { flushTransaction, PendingTerms } from './pending';
import { queryTerms, termCounts, tokenize } from './tokens';

export { normalizeText, tokenize, queryTerms } from './tokens';

export interface LexicalHit {
  itemId: string;
  /** BM25, higher is better. */
  score: number;
  /** score ÷ Σ IDF of the query's terms, capped at 1. */
  match: number;
}

export interface LexicalIndex {
  readonly kind: 'fts5' | 'postgres';
  /**
   * Indexes (or re-indexes) an item's text in the caller's transaction. False when the item is
   * already indexed from this same text: nothing was written.
   */
  put(q: Queryable, collection: string, ownerId: string, itemId: string, text: string): Promise<boolean>;
  remove(q: Queryable, collection: string, ownerId: string, itemIds: string[]): Promise<void>;
  /** Best `limit` items of this owner for the query, best first. */
  query(collection: string, ownerId: string, text: string, limit: number): Promise<LexicalHit[]>;
  /** Resolves once every write so far is in the engine's own index (SQLite: FTS5, see pending.ts; PostgreSQL: at once). */
  settle(): Promise<void>;
  /** Item ids of this collection and owner among `itemIds` that are indexed. */
  indexed(collection: string, ownerId: string, itemIds: string[]): Promise<Set<string>>;
}

const K1 = 1.2;
const B = 0.75;
/** Distinct terms stored per item (a tsvector holds at most 1 MB). */
const MAX_DISTINCT_TERMS = 30_000;
const ALL = '*';

/**
 * What `text_hash` is taken over besides the text: the terms' format. Change it with tokenize() (and
 * re-index), so no row is kept as unchanged across a change of the terms a text gives.
 */
const TERMS_FORMAT = 'terms-1';
const textHash = (text: string) => hash('sha1', `${TERMS_FORMAT}\n${text}`, 'base64');

const tags = new Map<string, string>();
/** Owners whose tags are remembered (a SHA-1 per write cost ~4 µs); the map starts over when full. */
const TAGS_KEPT = 10_000;

export function ownerTag(collection: string, ownerId: string): string {
  const key = `${collection}\u001f${ownerId}`;
  let tag = tags.get(key);
  if (tag === undefined) {
    tag = BigInt(`0x${createHash('sha1').update(key).digest('hex').slice(0, 10)}`).toString(36).padStart(8, '0').slice(-8);
    if (tags.size >= TAGS_KEPT) tags.clear();
    tags.set(key, tag);
  }
  return tag;
}

const idfOf = (n: number, df: number) => Math.max(1e-6, Math.log((n - df + 0.5) / (df + 0.5)));

function countsOf(text: string) {
  const tokens = tokenize(text);
  const counts = termCounts(tokens);
  if (counts.size > MAX_DISTINCT_TERMS) {
    const keep = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, MAX_DISTINCT_TERMS);
    return { length: tokens.length, counts: new Map(keep) };
  }
  return { length: tokens.length, counts };
}

async function statsOf(db: Queryable, collection: string, ownerId: string) {
  const r = await db.selectFrom('lexical_stats').select(['docs', 'tokens'])
    .where('collection', '=', collection).where('owner_id', '=', ownerId).executeTakeFirst();
  return { docs: Number(r?.docs ?? 0), tokens: Number(r?.tokens ?? 0) };
}

/**
 * Documents FTS5 scores per query, about: it computes bm25() for every document holding any MATCH
 * term (~2 µs each), so a query of common words over 100,000 documents took 40–80 ms.
 */
export const POSTINGS_BUDGET = 6000;

/**
 * The query terms FTS5 is asked to match, rarest first while their documents fit POSTINGS_BUDGET
 * (the rarest always). Left out: a term in half the documents or more, which weighs nothing in BM25
 * (its IDF is clamped to 1e-6, as FTS5 does), and beyond the budget the most common terms, the
 * lowest weights: a document is found by its rarer query words, and at that scale its score lacks
 * the small weight of the common ones it also holds. Below the budget (any owner with fewer than a
 * few thousand documents) scores are BM25 over every term.
 */
export function scoredTerms(tagged: string[], df: Map<string, number>, n: number): string[] {
  const weighed = tagged.filter((t) => Math.log((n - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5)) > 0);
  if (weighed.length === 0) return tagged;
  const byRarity = [...new Set(weighed)].sort((a, b) => (df.get(a) ?? 0) - (df.get(b) ?? 0));
  const out: string[] = [];
  let postings = 0;
  for (const t of byRarity) {
    postings += df.get(t) ?? 0;
    if (out.length > 0 && postings > POSTINGS_BUDGET) break;
    out.push(t);
  }
  return out;
}

// Sentinels of the compiled statements (prepared.ts): values no real call uses.
const P = { collection: '\u0000collection', owner: '\u0000owner', item: '\u0000item', hash: '\u0000hash', terms: '\u0000terms', id: -987_654_321_000_101, len: -987_654_321_000_102, docs: -987_654_321_000_103, tokens: -987_654_321_000_104 };

/** What both engines share: which items are indexed. */
abstract class BaseLexical {
  constructor(protected readonly db: Kysely<Database>) {}

  async indexed(collection: string, ownerId: string, itemIds: string[]): Promise<Set<string>> {
    if (itemIds.length === 0) return new Set();
    const rows = await this.db.selectFrom('lexical_docs').select('item_id')
      .where('collection', '=', collection).where('owner_id', '=', ownerId).where('item_id', 'in', itemIds).execute();
    return new Set(rows.map((r) => r.item_id));
  }

  /** The item's rows among `itemIds`, as the caller's transaction sees them. */
  protected rowsOf(q: Queryable, collection: string, ownerId: string, itemIds: string[]) {
    return q.selectFrom('lexical_docs').select(['id', 'doc_len'])
      .where('collection', '=', collection).where('owner_id', '=', ownerId).where('item_id', 'in', itemIds).execute();
  }
}

/** The terms as FTS5 is given them: tagged terms separated by spaces, each repeated tf times. */
function ftsTerms(tag: string, counts: Map<string, number>): string {
  let terms = '';
  for (const [term, n] of counts) {
    const t = `${tag}${term} `;
    terms += n === 1 ? t : t.repeat(n);
  }
  return terms;
}

class Fts5Lexical extends BaseLexical implements LexicalIndex {
  readonly kind = 'fts5' as const;
  private readonly pending: PendingTerms;
  private readonly upsert;

  constructor(db: Kysely<Database>, sqlite: SQLite.Database, commits?: Pick<CommitSync, 'transaction'>) {
    super(db);
    this.pending = new PendingTerms(db, sqlite, flushTransaction(db, commits));
    // One statement per put: the row's terms wait in it (pending.ts; a new row has no FTS5 row yet),
    // the same text again changes nothing (the hash), and triggers keep lexical_stats (migration 0109).
    // The text is tokenised before the hash is compared, so an unchanged text costs its tokenising
    // (about what the separate read of the row it replaces cost).
    this.upsert = preparedWrite(db, P, (p) => db.insertInto('lexical_docs')
      .values({ collection: p.collection, owner_id: p.owner, item_id: p.item, doc_len: p.len, text_hash: p.hash, pending_terms: p.terms, in_fts: 0 } as never)
      .onConflict((oc) => oc.columns(['collection', 'owner_id', 'item_id'])
        .doUpdateSet((eb) => ({ doc_len: eb.ref('excluded.doc_len'), text_hash: eb.ref('excluded.text_hash'), pending_terms: eb.ref('excluded.pending_terms') }))
        .whereRef('lexical_docs.text_hash', 'is not', 'excluded.text_hash')), sqlite);
  }

  async put(q: Queryable, collection: string, ownerId: string, itemId: string, text: string): Promise<boolean> {
    const { length, counts } = countsOf(text);
    const terms = ftsTerms(ownerTag(collection, ownerId), counts);
    const changed = (await this.upsert({ collection, owner: ownerId, item: itemId, len: length, hash: textHash(text), terms }, q)) > 0;
    if (changed) this.pending.noteWrite();
    return changed;
  }

  async remove(q: Queryable, collection: string, ownerId: string, itemIds: string[]): Promise<void> {
    if (itemIds.length === 0) return;
    const ids = (await this.rowsOf(q, collection, ownerId, itemIds)).map((r) => Number(r.id));
    if (ids.length === 0) return;
    const inFts = await this.pending.inFts(q, ids);
    if (inFts.length > 0) await sql`delete from lexical_fts where rowid in (${sql.join(inFts)})`.execute(q);
    await q.deleteFrom('lexical_docs').where('id', 'in', ids).execute();
  }

  settle(): Promise<void> {
    return this.pending.flush();
  }

  async query(collection: string, ownerId: string, text: string, limit: number): Promise<LexicalHit[]> {
    const terms = queryTerms(text);
    if (terms.length === 0) return [];
    const tag = ownerTag(collection, ownerId);
    const tagged = terms.map((t) => `${tag}${t}`);
    const [dfs, all, waiting] = await Promise.all([
      sql<{ term: string; doc: number }>`select term, doc from lexical_fts_terms where term in (${sql.join(tagged)})`.execute(this.db),
      statsOf(this.db, ALL, ALL),
      this.pending.of(collection, ownerId),
    ]);
    const df = new Map(dfs.rows.map((r) => [r.term, Number(r.doc)]));
    // Items not yet in FTS5 are scored here, from their pending terms, and count in the terms' document frequencies.
    const held = waiting.map((d) => ({ ...d, tf: termFrequencies(d.terms, tagged) }));
    for (const d of held) for (const t of d.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    const scored = scoredTerms(tagged, df, all.docs);
    // The limit is written into the SQL as a literal, not bound: with `limit ?` the same query took
    // 4-5× as long at 100,000 documents (22 ms against 4.5 ms, bench/memory-search-scale.ts). FTS5's
    // rows of the waiting items are stale: asked for that many more, and left out.
    const top = Math.max(1, Math.trunc(limit));
    const hits = await sql<{ id: number; item_id: string; score: number }>`
      select d.id, d.item_id, -f.s as score from (
        select rowid, bm25(lexical_fts) as s from lexical_fts where lexical_fts match ${scored.map((t) => `"${t}"`).join(' OR ')}
        order by s limit ${sql.lit(top + waiting.length)}
      ) f join lexical_docs d on d.id = f.rowid
      where d.collection = ${collection} and d.owner_id = ${ownerId} order by f.s`.execute(this.db);
    const stale = new Set(waiting.map((d) => d.id));
    const found = hits.rows.filter((r) => !stale.has(Number(r.id))).map((r) => ({ itemId: r.item_id, score: Number(r.score) }));
    if (held.length > 0) {
      const idf = new Map(scored.map((t) => [t, idfOf(all.docs, df.get(t) ?? 0)]));
      const avgdl = all.docs > 0 ? all.tokens / all.docs : 1;
      for (const d of held) {
        const score = bm25(d.tf, d.doc_len, idf, avgdl);
        if (score > 0) found.push({ itemId: d.item_id, score });
      }
      found.sort(byScore);
    }
    const norm = tagged.reduce((s, t) => s + idfOf(all.docs, df.get(t) ?? 0), 0);
    return found.slice(0, top).map((r) => ({ ...r, match: norm > 0 ? Math.min(1, r.score / norm) : 0 }));
  }
}

/** How often each of `terms` occurs in a pending item's terms text. */
function termFrequencies(text: string, terms: string[]): Map<string, number> {
  const wanted = new Set(terms);
  const tf = new Map<string, number>();
  for (const t of text.split(' ')) if (wanted.has(t)) tf.set(t, (tf.get(t) ?? 0) + 1);
  return tf;
}

/** BM25 of one document over the terms of `idf` (FTS5's bm25() with k1 = 1.2, b = 0.75). */
function bm25(tf: Map<string, number>, docLen: number, idf: Map<string, number>, avgdl: number): number {
  let score = 0;
  for (const [t, w] of idf) {
    const n = tf.get(t) ?? 0;
    if (n > 0) score += w * (n * (K1 + 1)) / (n + K1 * (1 - B + B * docLen / avgdl));
  }
  return score;
}

/** Best first; equal scores by item id. */
const byScore = (a: { itemId: string; score: number }, b: { itemId: string; score: number }) => b.score - a.score || (a.itemId < b.itemId ? -1 : 1);

class PgLexical extends BaseLexical implements LexicalIndex {
  readonly kind = 'postgres' as const;
  private readonly pq;

  constructor(db: Kysely<Database>) {
    super(db);
    this.pq = {
      prev: prepared(db, P, (p) => db.selectFrom('lexical_docs').select(['id', 'doc_len', 'text_hash'])
        .where('collection', '=', p.collection).where('owner_id', '=', p.owner).where('item_id', '=', p.item)),
      update: preparedWrite(db, P, (p) => db.updateTable('lexical_docs').set({ doc_len: p.len, text_hash: p.hash }).where('id', '=', p.id)),
      insert: prepared(db, P, (p) => db.insertInto('lexical_docs').values({ collection: p.collection, owner_id: p.owner, item_id: p.item, doc_len: p.len, text_hash: p.hash } as never)
        .returning('id')),
      bump: preparedWrite(db, P, (p) => db.insertInto('lexical_stats').values({ collection: p.collection, owner_id: p.owner, docs: p.docs, tokens: p.tokens })
        .onConflict((oc) => oc.columns(['collection', 'owner_id']).doUpdateSet({
          docs: sql`lexical_stats.docs + ${p.docs}`, tokens: sql`lexical_stats.tokens + ${p.tokens}`,
        }))),
    };
  }

  private async bumpStats(q: Queryable, collection: string, owner: string, docs: number, tokens: number) {
    if (docs !== 0 || tokens !== 0) await this.pq.bump({ collection, owner, docs, tokens }, q);
  }

  async put(q: Queryable, collection: string, ownerId: string, itemId: string, text: string): Promise<boolean> {
    const hash = textHash(text);
    const [prev] = await this.pq.prev({ collection, owner: ownerId, item: itemId }, q);
    if (prev?.text_hash === hash) return false;
    const { length, counts } = countsOf(text);
    let docId = prev ? Number(prev.id) : undefined;
    if (docId === undefined) docId = Number((await this.pq.insert({ collection, owner: ownerId, item: itemId, len: length, hash }, q))[0]!.id);
    else await this.pq.update({ id: docId, len: length, hash }, q);
    const tag = ownerTag(collection, ownerId);
    const parts: string[] = [];
    for (const [term, n] of counts) {
      const positions = Array.from({ length: Math.min(n, 255) }, (_, i) => i + 1).join(',');
      parts.push(`'${tag}${term}':${positions}`);
    }
    await sql`update lexical_docs set tsv = ${parts.join(' ')}::tsvector where id = ${docId}`.execute(q);
    await this.bumpStats(q, collection, ownerId, prev ? 0 : 1, length - (prev ? Number(prev.doc_len) : 0));
    return true;
  }

  async remove(q: Queryable, collection: string, ownerId: string, itemIds: string[]): Promise<void> {
    if (itemIds.length === 0) return;
    const rows = await this.rowsOf(q, collection, ownerId, itemIds);
    if (rows.length === 0) return;
    // The tsvector goes with its row.
    await q.deleteFrom('lexical_docs').where('id', 'in', rows.map((r) => Number(r.id))).execute();
    await this.bumpStats(q, collection, ownerId, -rows.length, -rows.reduce((s, r) => s + Number(r.doc_len), 0));
  }

  async settle(): Promise<void> {
    // The tsvector is written in the item's own row: nothing waits.
  }

  async query(collection: string, ownerId: string, text: string, limit: number): Promise<LexicalHit[]> {
    const terms = queryTerms(text);
    if (terms.length === 0) return [];
    const tag = ownerTag(collection, ownerId);
    const tagged = terms.map((t) => `${tag}${t}`);
    const tsquery = tagged.map((t) => `'${t}'`).join(' | ');
    const [postings, st] = await Promise.all([
      sql<{ item_id: string; doc_len: number; lexeme: string; tf: number }>`
        select d.item_id, d.doc_len, u.lexeme, cardinality(u.positions) as tf
        from lexical_docs d cross join lateral unnest(d.tsv) u
        where d.collection = ${collection} and d.owner_id = ${ownerId} and d.tsv @@ ${tsquery}::tsquery
          and u.lexeme = any(${tagged}::text[])`.execute(this.db),
      statsOf(this.db, collection, ownerId),
    ]);
    return rankBm25(postings.rows, tagged, st.docs, st.docs > 0 ? st.tokens / st.docs : 1, limit);
  }
}

/** BM25 as FTS5 computes it, over postings (item, length, term, tf). Exported for tests. */
export function rankBm25(
  postings: { item_id: string; doc_len: number; lexeme: string; tf: number }[], terms: string[], n: number, avgdl: number, limit: number,
): LexicalHit[] {
  const df = new Map<string, number>();
  for (const p of postings) df.set(p.lexeme, (df.get(p.lexeme) ?? 0) + 1);
  const idf = new Map(terms.map((t) => [t, idfOf(n, df.get(t) ?? 0)]));
  const docs = new Map<string, { len: number; tf: Map<string, number> }>();
  for (const p of postings) {
    let d = docs.get(p.item_id);
    if (!d) docs.set(p.item_id, (d = { len: Number(p.doc_len), tf: new Map() }));
    d.tf.set(p.lexeme, Number(p.tf));
  }
  const scores = new Map([...docs].map(([item, d]) => [item, bm25(d.tf, d.len, idf, avgdl)]));
  const norm = terms.reduce((s, t) => s + idf.get(t)!, 0);
  return [...scores].map(([itemId, score]) => ({ itemId, score }))
    .sort(byScore)
    .slice(0, limit)
    .map((r) => ({ ...r, match: norm > 0 ? Math.min(1, r.score / norm) : 0 }));
}

export function createLexicalIndex(database: {
  engine: 'sqlite' | 'postgres'; db: Kysely<Database>; sqlite?: SQLite.Database; commits?: Pick<CommitSync, 'transaction'>;
}): LexicalIndex {
  if (database.engine === 'postgres') return new PgLexical(database.db);
  if (!database.sqlite) throw new Error('the FTS5 lexical index needs the SQLite connection');
  return new Fts5Lexical(database.db, database.sqlite, database.commits);
}
