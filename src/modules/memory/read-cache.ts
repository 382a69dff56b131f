/**
 * Hot-key cache for GET /v1/memory/{key}: the live entry and the agent's counters, kept in this
 * process so that reading the same keys again costs no query.
 *
 * Only on SQLite, where one svc process owns the database by design, so every change to memory's
 * tables goes through this process's store (store.ts is the only code that writes them). The store
 * calls `changed(agent)` inside every transaction that may change an agent's memory rows (write,
 * delete, search count, expiry sweep), before its first statement. A cached read stays valid while:
 *   - the agent has had no such change since the read began (its generation is the same);
 *   - the UTC month is the one it was read in (the write and search counters are per month);
 *   - `now` is before the entry's own expiry and before the next expiry among the agent's live
 *     entries (an expired entry stops counting toward storage without any write).
 * A read that raced a change (the generation moved while it ran) is not cached. Values over
 * `maxValueBytes` are not cached, and the cache holds at most `maxEntries` entries and `maxBytes`
 * of values (oldest filled first out).
 */
import type { Counters, EntryRow } from './rows';

export interface CachedRead {
  entry: EntryRow;
  counters: Counters;
}

export interface ReadCacheOptions {
  maxEntries?: number;
  maxValueBytes?: number;
  maxBytes?: number;
  /** Agents whose generation is tracked; past it, the cache and the generations start over. */
  maxAgents?: number;
}

interface Slot { gen: number; month: string; until: number; bytes: number; read: CachedRead }

export function createReadCache(opts: ReadCacheOptions = {}) {
  const maxEntries = opts.maxEntries ?? 10_000;
  const maxValueBytes = opts.maxValueBytes ?? 64 * 1024;
  const maxBytes = opts.maxBytes ?? 32 * 1024 * 1024;
  const maxAgents = opts.maxAgents ?? 100_000;
  // Generations: a global sequence; an agent's generation is the sequence number of its last change,
  // or `floor` (the sequence when the table last started over) when none is recorded since.
  let seq = 0;
  let floor = 0;
  const gens = new Map<string, number>();
  const slots = new Map<string, Slot>();
  let bytes = 0;

  const slotKey = (agentId: string, key: string) => `${agentId}\u0000${key}`;
  const generation = (agentId: string) => gens.get(agentId) ?? floor;
  const drop = (k: string, s: Slot) => {
    slots.delete(k);
    bytes -= s.bytes;
  };

  return {
    /** The agent's memory rows may change: every cached read of that agent is stale from now on. */
    changed(agentId: string): void {
      if (gens.size >= maxAgents && !gens.has(agentId)) {
        gens.clear();
        slots.clear();
        bytes = 0;
        floor = seq + 1;
      }
      gens.set(agentId, ++seq);
    },

    /** Taken before a read that may fill the cache; `set` refuses the read if it has moved since. */
    generation,

    get(agentId: string, key: string, month: string, now: number): CachedRead | undefined {
      const k = slotKey(agentId, key);
      const s = slots.get(k);
      if (!s) return undefined;
      if (s.gen !== generation(agentId) || s.month !== month || now >= s.until) {
        drop(k, s);
        return undefined;
      }
      return s.read;
    },

    /** Keeps a read made at generation `gen`; `nextExpiry`: the soonest expiry among the agent's live entries after the read's `now`. */
    set(agentId: string, key: string, month: string, gen: number, read: CachedRead, nextExpiry: number | null): void {
      if (gen !== generation(agentId)) return;
      const size = read.entry.value.length;
      if (size > maxValueBytes) return;
      const k = slotKey(agentId, key);
      const old = slots.get(k);
      if (old) drop(k, old);
      for (const [oldest, s] of slots) {
        if (slots.size < maxEntries && bytes + size <= maxBytes) break;
        drop(oldest, s);
      }
      const until = Math.min(read.entry.expires_at ?? Infinity, nextExpiry ?? Infinity);
      slots.set(k, { gen, month, until, bytes: size, read });
      bytes += size;
    },

    get size(): number {
      return slots.size;
    },
  };
}

export type ReadCache = ReturnType<typeof createReadCache>;
