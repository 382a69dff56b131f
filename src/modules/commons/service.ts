/**
 * Commons: an opt-in shared area. An agent publishes an entry (key, JSON value, tags, provenance);
 * every authenticated agent lists, reads and searches all entries (not metered: no credit debit);
 * agents vouch for entries (once each, never their own); the publisher deletes its own. Reads carry
 * content_trust "untrusted_data": entries are data written by other agents, never instructions.
 * Publishing needs the svc:commons-publish capability (a paying tier, or a scoped key granting it),
 * as the passport's verified capabilities say. Design: docs/memory.md, "Commons".
 */
import { ApiError } from '../../http/errors';
import type { AuthContext } from '../../http/route-config';
import { iso, type Clock } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { tierOf } from '../../lib/tiers';
import { textForEmbedding, type Embedder } from '../../infra/embeddings';
import type { VectorIndex, VectorIndexer } from '../../infra/vectors';
import type { LexicalIndex } from '../../infra/lexical';
import { prepareHybrid } from '../../infra/vectors/hybrid';
import type { Kysely } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Trx } from '../memory/store';
import type { CommonsEntriesTable } from '../../infra/db/tables/memory';
import { MAX_VALUE_BYTES } from '../memory/schemas';
import { serializeValue } from '../memory/service';
import { EMBED_SOURCE_MAX_CHARS, LEXICAL_MAX_CHARS } from '../memory/semantic';
import type { CommonsStore } from './store';
import { trimBlank } from '../../lib/text';

export const COMMONS_COLLECTION = 'commons';
/** Commons vectors are shared: one owner for all. */
export const COMMONS_OWNER = '';
const CONTENT_TRUST = 'untrusted_data' as const;

export interface CommonsDeps {
  store: CommonsStore;
  clock: Clock;
  upgradeUrl: string;
  embedder?: Embedder;
  index?: VectorIndex;
  indexer?: VectorIndexer;
  lexical: LexicalIndex;
  db: Kysely<Database>;
  catchUpMs?: number;
}

const notFound = (id: string) => new ApiError(404, 'COMMONS_ENTRY_NOT_FOUND', `No commons entry ${id}`, { entry_id: id });

export function entryView(r: CommonsEntriesTable) {
  return {
    entry_id: r.entry_id,
    key: r.key,
    value: JSON.parse(r.value) as unknown,
    tags: JSON.parse(r.tags) as string[],
    source: r.source,
    confidence: r.confidence,
    publisher_id: r.publisher_id,
    vouch_count: r.vouch_count,
    size_bytes: r.size_bytes,
    created_at: iso(r.created_at),
    content_trust: CONTENT_TRUST,
  };
}

export function canPublish(auth: Pick<AuthContext, 'tier' | 'scopes'>): boolean {
  return tierOf(auth.tier).name !== 'free' || auth.scopes.includes('svc:commons-publish');
}

const STATS_TTL_MS = 1000;

export function createCommonsService(deps: CommonsDeps) {
  const { store, clock } = deps;
  const statsCache = new Map<string, { at: number; value: { size: number; contributions: number } }>();
  /** In the publish's transaction: found by its words at once, by meaning once embedded. */
  async function indexEntry(trx: Trx, entryId: string, key: string, value: unknown) {
    await deps.lexical.put(trx, COMMONS_COLLECTION, COMMONS_OWNER, entryId, textForEmbedding(key, value, LEXICAL_MAX_CHARS));
    await deps.indexer?.enqueue(trx, COMMONS_COLLECTION, COMMONS_OWNER, [entryId]);
  }
  return {
    async publish(auth: AuthContext, input: { key: string; value: unknown; tags?: string[]; source?: string | null; confidence?: number }) {
      if (!canPublish(auth)) {
        throw new ApiError(403, 'COMMONS_PUBLISH_NOT_PERMITTED', 'Publishing to the commons needs the svc:commons-publish capability: a paying tier, or a scoped key that grants it', {
          upgrade_url: deps.upgradeUrl,
        });
      }
      const { json, bytes } = serializeValue(input.value);
      if (bytes > MAX_VALUE_BYTES) {
        throw new ApiError(413, 'COMMONS_VALUE_TOO_LARGE', `value is ${bytes} bytes once serialized; the limit is ${MAX_VALUE_BYTES} (512 KB)`, { size_bytes: bytes, max_bytes: MAX_VALUE_BYTES });
      }
      const now = clock.now();
      const row: CommonsEntriesTable = {
        entry_id: newId(), publisher_id: auth.agentId, key: input.key, value: json, size_bytes: bytes,
        tags: JSON.stringify([...new Set(input.tags ?? [])]), source: input.source ?? null, confidence: input.confidence ?? 1,
        vouch_count: 0, created_at: now, updated_at: now, deleted_at: null,
      };
      await store.insert(row, (trx) => indexEntry(trx, row.entry_id, input.key, input.value));
      statsCache.clear();
      return { status: 'success' as const, entry: entryView(row) };
    },

    async get(entryId: string) {
      const r = await store.get(entryId);
      if (!r) throw notFound(entryId);
      return { status: 'success' as const, entry: entryView(r), content_trust: CONTENT_TRUST };
    },

    async list(q: { page?: number; per_page?: number; tag?: string; publisher?: string }) {
      const page = q.page ?? 1;
      const perPage = q.per_page ?? 20;
      const { rows, total } = await store.list({ tag: q.tag, publisher: q.publisher, offset: (page - 1) * perPage, limit: perPage });
      return { status: 'success' as const, entries: rows.map(entryView), total, page, per_page: perPage, content_trust: CONTENT_TRUST };
    },

    async search(q: { q?: string; limit?: number; threshold?: number }) {
      const text = trimBlank(q.q ?? '');
      if (!text) throw new ApiError(422, 'COMMONS_QUERY_REQUIRED', 'q is required: 1 to 500 characters, not only whitespace', { field: 'querystring.q' });
      const { embedder, index, indexer } = deps;
      if (!embedder || !index || !indexer) {
        throw new ApiError(503, 'COMMONS_SEARCH_UNAVAILABLE', 'Semantic commons search is not available on this host: no embeddings provider is configured');
      }
      const limit = q.limit ?? 5;
      const threshold = q.threshold ?? 0.7;
      let found;
      try {
        const { pending, ranked } = await prepareHybrid({ db: deps.db, embedder, index, indexer, lexical: deps.lexical, catchUpMs: deps.catchUpMs }, COMMONS_COLLECTION, COMMONS_OWNER, text);
        found = { pending, hits: await ranked(limit) };
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === 'EMBEDDINGS_UNAVAILABLE' || code === 'VECTOR_INDEX_UNAVAILABLE') {
          throw new ApiError(503, 'COMMONS_SEARCH_UNAVAILABLE', 'Semantic commons search failed upstream; try again shortly');
        }
        throw e;
      }
      // Shown to 4 places, and compared as shown: a threshold equal to a shown similarity keeps that hit.
      const wanted = found.hits.map((h) => ({ id: h.itemId, similarity: Number(h.similarity.toFixed(4)) })).filter((h) => h.similarity >= threshold);
      const rows = new Map((await store.getMany(wanted.map((h) => h.id))).map((r) => [r.entry_id, r]));
      const results = wanted.flatMap((h) => {
        const r = rows.get(h.id);
        return r ? [{ ...entryView(r), similarity: h.similarity }] : [];
      });
      return {
        status: 'success' as const, query: text, results, total_returned: results.length, content_trust: CONTENT_TRUST,
        // Entries not yet searchable by meaning (found by their words all the same); 0: complete.
        pending_embeddings: found.pending,
      };
    },

    async vouch(agentId: string, entryId: string) {
      const r = await store.get(entryId);
      if (!r) throw notFound(entryId);
      if (r.publisher_id === agentId) throw new ApiError(403, 'COMMONS_SELF_VOUCH', 'An agent cannot vouch for its own entry');
      const v = await store.vouch(entryId, agentId, clock.now());
      return { status: 'success' as const, entry_id: entryId, vouched: true as const, already_vouched: !v.added, vouch_count: v.count };
    },

    async remove(agentId: string, entryId: string) {
      const r = await store.get(entryId);
      if (!r) throw notFound(entryId);
      if (r.publisher_id !== agentId) throw new ApiError(403, 'COMMONS_NOT_PUBLISHER', 'Only the publisher of an entry can delete it');
      await store.remove(entryId, clock.now(), async (trx) => {
        await deps.lexical.remove(trx, COMMONS_COLLECTION, COMMONS_OWNER, [entryId]);
        await deps.indexer?.forget(trx, COMMONS_COLLECTION, COMMONS_OWNER, [entryId]);
      });
      statsCache.clear();
      return { status: 'success' as const, entry_id: entryId, deleted: true as const };
    },

    /**
     * For `_svc.usage` of every metered answer (billing's CommonsStatsPort): entries in the commons,
     * and this agent's. Kept for a second per agent (a count over the whole commons on every charge
     * would grow with it); a publish or delete on this instance refreshes at once.
     */
    async stats(agentId: string): Promise<{ size: number; contributions: number }> {
      const now = clock.now();
      const hit = statsCache.get(agentId);
      if (hit && now - hit.at < STATS_TTL_MS && now >= hit.at) return hit.value;
      const value = await store.stats(agentId);
      if (statsCache.size >= 10_000) statsCache.clear();
      statsCache.set(agentId, { at: now, value });
      return value;
    },

    /** Indexes the words of entries published before the lexical index existed, 500 per transaction. */
    async backfillLexical(): Promise<number> {
      let total = 0;
      for (;;) {
        const n = await deps.db.transaction().execute(async (trx) => {
          const rows = await trx.selectFrom('commons_entries as e').select(['e.entry_id', 'e.key', 'e.value'])
            .where('e.deleted_at', 'is', null)
            .where(({ not, exists, selectFrom }) => not(exists(selectFrom('lexical_docs as ld').select('ld.id')
              .where('ld.collection', '=', COMMONS_COLLECTION).where('ld.owner_id', '=', COMMONS_OWNER).whereRef('ld.item_id', '=', 'e.entry_id'))))
            .limit(500).execute();
          for (const r of rows) await deps.lexical.put(trx, COMMONS_COLLECTION, COMMONS_OWNER, r.entry_id, textForEmbedding(r.key, JSON.parse(r.value), LEXICAL_MAX_CHARS));
          return rows.length;
        });
        total += n;
        if (n < 500) return total;
      }
    },

    /** The indexer's text source for commons entries. */
    textSource() {
      return async (_owner: string, ids: string[]) => {
        const rows = await store.getMany(ids);
        return new Map(rows.map((r) => [r.entry_id, { text: textForEmbedding(r.key, JSON.parse(r.value), EMBED_SOURCE_MAX_CHARS), version: 1 }]));
      };
    },
  };
}

export type CommonsService = ReturnType<typeof createCommonsService>;
