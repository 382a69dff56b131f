/**
 * Memory: per-agent JSON values by key over an append-only ledger (store.ts). The API's rules for
 * memory entries, routes and limits live here; see docs/memory.md for the design.
 *
 * PUT order: validate (key, size, derived_from) → rate limit (routes) → one transaction (shared by
 * concurrent writes, each in its own savepoint) that checks the monthly write cap and the storage cap,
 * charges through billing (meter.chargeWrite) and writes: the charge commits with the write or rolls
 * back with it, and a refused write rolls back its savepoint before anything is charged.
 */
import { ApiError } from '../../http/errors';
import { iso, type Clock } from '../../lib/clock';
import { tierOf, type TierDefinition } from '../../lib/tiers';
import { IMPORTANCE_RANK, MAX_VALUE_BYTES, type Importance } from './schemas';
import type { MemoryMeter, MemorySemantic } from './ports';
import type { Counters, EntryRow, MemoryStore } from './store';
import { utcMonth } from '../../lib/utc';
import { usageOf } from './usage';
import { trimBlank } from '../../lib/text';
import { meets, versionConflict, type VersionPrecondition } from './ledger';

export interface MemoryServiceDeps {
  store: MemoryStore;
  clock: Clock;
  upgradeUrl: string;
  meter?: MemoryMeter;
  semantic?: MemorySemantic;
}

export interface PutInput {
  value: unknown;
  ttl?: number;
  importance?: Importance;
  source?: string | null;
  confidence?: number;
  derived_from?: { start_version: number; end_version: number };
}

export interface Caller {
  agentId: string;
  tier: string;
}

const CONTENT_TRUST = 'untrusted_data';

/** Compact JSON and its UTF-8 size: what the 512 KB rule and storage accounting measure. */
export function serializeValue(value: unknown): { json: string; bytes: number } {
  const json = JSON.stringify(value);
  return { json, bytes: Buffer.byteLength(json, 'utf8') };
}

const derivedOf = (r: Pick<EntryRow, 'derived_start' | 'derived_end'>) =>
  // Written together (both or neither).
  r.derived_start === null ? null : { start_version: r.derived_start, end_version: r.derived_end as number };

/** The most index candidates one memory search reads while it skips keys that are no longer live. */
const MAX_SEARCH_CANDIDATES = 1000;

export function createMemoryService(deps: MemoryServiceDeps) {
  const { store, clock } = deps;

  const limitError = (status: number, code: string, message: string, extra: Record<string, unknown> = {}) =>
    new ApiError(status, code, message, { upgrade_url: deps.upgradeUrl, ...extra });

  function refuseOverCaps(tier: TierDefinition, c: Counters, newBytes: number, replacedBytes: number, countsThisWrite: boolean) {
    const cap = tier.memoryWritesPerMonth;
    if (cap !== null && c.writes - (countsThisWrite ? 1 : 0) >= cap) {
      throw limitError(429, 'MEMORY_OPS_LIMIT', `Monthly memory write cap reached (${cap} writes per UTC month on the ${tier.label} tier)`, {
        ops_this_month: c.writes, ops_limit: cap,
      });
    }
    const after = c.storageBytes - replacedBytes + newBytes;
    if (after > tier.memoryStorageBytes) {
      throw limitError(413, 'MEMORY_STORAGE_LIMIT', `This write would bring memory storage to ${after} bytes, over the ${tier.memoryStorageBytes} bytes of the ${tier.label} tier`, {
        storage_bytes: c.storageBytes, storage_limit_bytes: tier.memoryStorageBytes,
      });
    }
  }

  async function usage(caller: Caller) {
    const now = clock.now();
    return usageOf(await store.counters(caller.agentId, utcMonth(now), now), tierOf(caller.tier));
  }

  /** An entry's fields but its key and value. */
  const entryMeta = (r: EntryRow) => ({
    importance: r.importance,
    source: r.source,
    confidence: r.confidence,
    derived_from: derivedOf(r),
    version: r.version,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    expires_at: r.expires_at === null ? null : iso(r.expires_at),
    content_trust: CONTENT_TRUST,
  });
  const entryView = (r: EntryRow) => ({ key: r.key, value: JSON.parse(r.value) as unknown, ...entryMeta(r) });

  return {
    usage,

    /** `precondition`: an If-Match the live version must meet (ledger.ts), checked in the write's transaction. */
    async put(caller: Caller, key: string, input: PutInput, precondition?: VersionPrecondition) {
      const { json, bytes } = serializeValue(input.value);
      if (json === undefined) throw new ApiError(422, 'VALIDATION_FAILED', 'value must be JSON', { field: 'body.value' });
      if (bytes > MAX_VALUE_BYTES) {
        throw new ApiError(413, 'MEMORY_VALUE_TOO_LARGE', `value is ${bytes} bytes once serialized; the limit is ${MAX_VALUE_BYTES} (512 KB)`, {
          size_bytes: bytes, max_bytes: MAX_VALUE_BYTES,
        });
      }
      const d = input.derived_from;
      if (d && !(d.start_version >= 1 && d.end_version >= d.start_version)) {
        throw new ApiError(422, 'MEMORY_DERIVED_FROM_INVALID', 'derived_from.end_version must be >= start_version (both integers >= 1)', { field: 'body.derived_from' });
      }
      const tier = tierOf(caller.tier);
      const now = clock.now();
      const month = utcMonth(now);

      // The caps are checked inside the write's transaction, before its charge: a refused write rolls
      // back its savepoint (the count included) and is never charged. No separate read ahead of it.
      const importance = input.importance ?? 'normal';
      const result = await store.put({
        agentId: caller.agentId, key, value: json, sizeBytes: bytes, importance, importanceRank: IMPORTANCE_RANK[importance],
        source: input.source ?? null, confidence: input.confidence ?? 1, derivedStart: d?.start_version ?? null,
        derivedEnd: d?.end_version ?? null, expiresAt: input.ttl ? now + input.ttl * 1000 : null, now,
      }, month, tier.memoryWritesPerMonth, (prev, c) => {
        const live = prev?.state === 'live' && (prev.expires_at === null || prev.expires_at > now) ? prev : undefined;
        const liveVersion = live ? Number(live.version) : undefined;
        if (precondition && !meets(precondition, liveVersion)) throw versionConflict(key, precondition, liveVersion);
        const replaced = live ? live.size_bytes : 0;
        refuseOverCaps(tier, c, bytes, replaced, true);
      }, {
        charge: deps.meter ? (trx) => deps.meter!.chargeWrite(trx, caller.agentId, caller.tier) : undefined,
        afterWrite: deps.semantic ? (trx) => deps.semantic!.indexWrite(trx, caller.agentId, key, input.value) : undefined,
      });
      if (result.outOfWrites) refuseOverCaps(tier, { ...result.counters, writes: tier.memoryWritesPerMonth ?? 0 }, 0, 0, false);
      return {
        status: 'success',
        key,
        value: input.value,
        version: result.version,
        expires_at: input.ttl ? iso(now + input.ttl * 1000) : null,
        usage: usageOf(result.counters, tier),
        /** Billing's `_svc.usage` of this write (undefined when metering is off); the route puts it in `_svc`. */
        svcUsage: await result.charged?.committed(),
      };
    },

    /**
     * The GET response as JSON text. The stored value is already compact JSON (serializeValue), so it
     * goes into the answer as it is: no JSON.parse and re-serialization of up to 512 KB per read.
     */
    async get(caller: Caller, key: string): Promise<string> {
      return (await this.getEntry(caller, key)).json;
    },

    /** The GET response as JSON text and the live version (the route's ETag). */
    async getEntry(caller: Caller, key: string): Promise<{ json: string; version: number }> {
      const now = clock.now();
      const found = await store.getWithCounters(caller.agentId, key, utcMonth(now), now);
      if (!found) throw new ApiError(404, 'MEMORY_KEY_NOT_FOUND', `No live value for key "${key}"`, { key });
      const r = found.entry;
      const rest = JSON.stringify({ ...entryMeta(r), usage: usageOf(found.counters, tierOf(caller.tier)) });
      return { json: `{"status":"success","key":${JSON.stringify(r.key)},"value":${r.value},${rest.slice(1)}`, version: Number(r.version) };
    },

    async remove(caller: Caller, key: string) {
      const now = clock.now();
      const done = await store.remove(caller.agentId, key, now, deps.semantic ? (trx) => deps.semantic!.forget(trx, caller.agentId, [key]) : undefined);
      if (!done) throw new ApiError(404, 'MEMORY_KEY_NOT_FOUND', `No live value for key "${key}"`, { key });
      return { status: 'success', key, deleted: true, usage: await usage(caller) };
    },

    async list(caller: Caller, q: { page?: number; per_page?: number; prefix?: string; importance?: Importance }) {
      const page = q.page ?? 1;
      const perPage = q.per_page ?? 50;
      const { rows, total } = await store.list(caller.agentId, clock.now(), {
        prefix: q.prefix || undefined, importance: q.importance, offset: (page - 1) * perPage, limit: perPage,
      });
      return {
        status: 'success',
        keys: rows.map((r) => ({
          key: r.key, size_bytes: r.size_bytes, importance: r.importance, source: r.source, confidence: r.confidence,
          version: r.version, created_at: iso(r.created_at), updated_at: iso(r.updated_at),
          expires_at: r.expires_at === null ? null : iso(r.expires_at),
        })),
        total,
        page,
        per_page: perPage,
        content_trust: CONTENT_TRUST,
      };
    },

    async stats(caller: Caller) {
      const tier = tierOf(caller.tier);
      return { status: 'success', tier: tier.name, ...(await usage(caller)) };
    },

    async context(caller: Caller, q: { limit?: number; importance?: Importance }) {
      const rows = await store.context(caller.agentId, clock.now(), IMPORTANCE_RANK[q.importance ?? 'low'], q.limit ?? 10);
      return { status: 'success', memories: rows.map(entryView), total_returned: rows.length, content_trust: CONTENT_TRUST };
    },

    async search(caller: Caller, q: { q?: string; limit?: number; importance?: Importance; threshold?: number }) {
      const text = trimBlank(q.q ?? '');
      if (!text) throw new ApiError(422, 'MEMORY_QUERY_REQUIRED', 'q is required: 1 to 500 characters, not only whitespace', { field: 'querystring.q' });
      const why = deps.semantic ? deps.semantic.unavailableReason() : 'no embeddings provider is configured';
      if (why || !deps.semantic) throw new ApiError(503, 'MEMORY_SEARCH_UNAVAILABLE', `Semantic memory search is not available on this host: ${why}`);
      const limit = q.limit ?? 5;
      const threshold = q.threshold ?? 0.7;
      const minRank = IMPORTANCE_RANK[q.importance ?? 'low'];
      const upstream = async <T>(step: () => Promise<T>): Promise<T> => {
        try {
          return await step();
        } catch (e) {
          const code = (e as { code?: string }).code;
          if (code === 'EMBEDDINGS_UNAVAILABLE' || code === 'VECTOR_INDEX_UNAVAILABLE') {
            throw new ApiError(503, 'MEMORY_SEARCH_UNAVAILABLE', 'Semantic memory search failed upstream (embeddings or vector index); try again shortly');
          }
          throw e;
        }
      };
      const { pending, ranked } = await upstream(() => deps.semantic!.nearest(caller.agentId, text));
      const now = clock.now();
      // The index may still hold keys that are not live (expired until the sweeper runs) or under the
      // importance floor: ask for more candidates while they could still fill `limit`.
      let k = minRank > 1 ? Math.min(100, limit * 5) : limit;
      let results: (ReturnType<typeof entryView> & { similarity: number })[] = [];
      for (;;) {
        const hits = await upstream(() => ranked(k));
        // Shown to 4 places, and compared as shown: a threshold equal to a shown similarity keeps that hit.
        const wanted = hits.map((h) => ({ key: h.key, similarity: Number(h.similarity.toFixed(4)) })).filter((h) => h.similarity >= threshold);
        const rows = new Map((await store.getMany(caller.agentId, wanted.map((h) => h.key), now)).map((r) => [r.key, r]));
        results = [];
        for (const h of wanted) {
          const r = rows.get(h.key);
          if (!r || IMPORTANCE_RANK[r.importance as Importance] < minRank) continue;
          results.push({ ...entryView(r), similarity: h.similarity });
          if (results.length === limit) break;
        }
        // More candidates help only when the index gave all k asked for and none fell under the threshold.
        if (results.length === limit || hits.length < k || wanted.length < hits.length || k >= MAX_SEARCH_CANDIDATES) break;
        k = Math.min(MAX_SEARCH_CANDIDATES, k * 4);
      }
      const counted = await store.countSearch(caller.agentId, utcMonth(now), now);
      return {
        status: 'success',
        query: text,
        results,
        total_returned: results.length,
        content_trust: CONTENT_TRUST,
        usage: usageOf(counted, tierOf(caller.tier)),
        // This agent's entries not yet searchable by meaning (found by their words all the same); 0: complete.
        pending_embeddings: pending,
      };
    },

    /** Releases expired entries (and their vectors); returns how many. Run by the sweeper. */
    async sweepExpired(batch = 500): Promise<number> {
      let total = 0;
      for (;;) {
        const n = await store.sweepExpired(clock.now(), batch, deps.semantic
          ? async (trx, swept) => {
              const byAgent = new Map<string, string[]>();
              for (const s of swept) byAgent.set(s.agent_id, [...(byAgent.get(s.agent_id) ?? []), s.key]);
              for (const [agent, keys] of byAgent) await deps.semantic!.forget(trx, agent, keys);
            }
          : undefined);
        total += n;
        if (n < batch) return total;
      }
    },
  };
}

export type MemoryService = ReturnType<typeof createMemoryService>;
