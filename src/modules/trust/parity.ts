/**
 * Parity check: replays the whole trust log from index 0 into fresh in-memory projections and
 * diffs them against the stored ones. It also re-hashes every entry and rebuilds every complete
 * subtree of the Merkle tree, so an entry or a tree node rewritten in place, a projection row altered
 * behind the service's back, or a projection row with no log entry is reported. The result is stored; `/latest` returns it.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import { iso } from '../../lib/clock';
import { newOrderedId } from '../../lib/ids';
import { leafHash, nodeHash } from '../../infra/tlog/merkle';
import type { TrustLogStore } from './log-store';

/** One log entry as replay sees it. */
export interface ReplayEntry {
  index: number;
  kind: string;
  at: number;
  agent_id: string | null;
  epoch: number | null;
  data: Record<string, unknown>;
}

export interface Mismatch { projection: string; key: string; field: string; expected: unknown; stored: unknown }

/** Reads of one consistent snapshot of the database (the check's whole view). */
export type SnapshotDb = Kysely<Database> | Transaction<Database>;

/** A projection rebuilt from the log: fed every entry in order, then compared with the stored rows of the same snapshot. */
export interface Replayer {
  feed(entry: ReplayEntry): void;
  diff(now: number, db: SnapshotDb): Promise<Mismatch[]>;
  /** Agents the projection holds rows for (rebuilt or stored). */
  agents(): Iterable<string>;
}

export type ReplayerFactory = () => Replayer;

const PAGE = 2000;
/** Mismatches listed in one result (all are counted). */
const MAX_LISTED = 200;

/** Relative tolerance for decayed sums: the replay adds in another order than the live updates did. */
export function close(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/** Compares two rows field by field (numbers with `close` when `approx` names them). */
export function diffRows(projection: string, key: string, expected: Record<string, unknown> | undefined, stored: Record<string, unknown> | undefined, approx: string[] = []): Mismatch[] {
  if (!expected || !stored) return [{ projection, key, field: '*', expected: expected ? 'row' : 'no row', stored: stored ? 'row' : 'no row' }];
  const out: Mismatch[] = [];
  for (const field of Object.keys(expected)) {
    const e = expected[field];
    const s = stored[field];
    const same = approx.includes(field) && typeof e === 'number' ? close(e, Number(s)) : normal(e) === normal(s);
    if (!same) out.push({ projection, key, field, expected: e, stored: s });
  }
  return out;
}

/**
 * Diffs a projection rebuilt from the log against its stored rows: each rebuilt row against the
 * stored row of the same key (absent: one '*' mismatch), then each stored row nothing rebuilt.
 * `shape` picks the fields compared, from either side.
 */
export function diffKeyed<T>(
  projection: string, rebuilt: Map<string, T>, stored: Iterable<T>, keyOf: (row: T) => string,
  shape: (row: T) => Record<string, unknown>, approx: string[] = [],
): Mismatch[] {
  const shapedStored = new Map<string, Record<string, unknown>>();
  for (const row of stored) shapedStored.set(keyOf(row), shape(row));
  return diffMaps(projection, new Map([...rebuilt].map(([key, row]) => [key, shape(row)])), shapedStored, approx);
}

/** The same walk over rows already shaped by key (for a projection whose stored rows take another shape than the rebuilt ones). */
export function diffMaps(
  projection: string, rebuilt: Map<string, object>, stored: Map<string, object>, approx: string[] = [],
): Mismatch[] {
  const out: Mismatch[] = [];
  for (const [key, row] of rebuilt) out.push(...diffRows(projection, key, row as Record<string, unknown>, stored.get(key) as Record<string, unknown> | undefined, approx));
  for (const [key, s] of stored) if (!rebuilt.has(key)) out.push(...diffRows(projection, key, undefined, s as Record<string, unknown>));
  return out;
}

const normal = (v: unknown) => (v === null || v === undefined ? null : typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v);

export function createParity(deps: {
  db: Kysely<Database>; store: TrustLogStore; clock: Clock; projections: ReplayerFactory[];
  /** Runs the check's reads in one snapshot, so appends committed meanwhile are neither half seen nor reported. */
  snapshot: <T>(fn: (db: SnapshotDb) => Promise<T>) => Promise<T>;
}) {
  const { db, store, clock } = deps;

  /** Stored complete-subtree hashes against the rebuilt ones, page by page in key order. */
  async function diffNodes(built: Map<string, string>, db: SnapshotDb): Promise<Mismatch[]> {
    const out: Mismatch[] = [];
    const seen = new Set<string>();
    let after: { level: number; idx: number } | undefined;
    for (;;) {
      let q = db.selectFrom('trust_log_nodes').select(['level', 'idx', 'hash']);
      if (after) {
        const a = after;
        q = q.where((eb) => eb.or([eb('level', '>', a.level), eb.and([eb('level', '=', a.level), eb('idx', '>', a.idx)])]));
      }
      const rows = await q.orderBy('level').orderBy('idx').limit(PAGE * 4).execute();
      if (rows.length === 0) break;
      for (const r of rows) {
        const key = `${r.level}/${Number(r.idx)}`;
        seen.add(key);
        const expected = built.get(key);
        if (expected !== r.hash) out.push({ projection: 'trust_log_nodes', key, field: 'hash', expected: expected ?? 'no node', stored: r.hash });
      }
      const last = rows[rows.length - 1];
      after = { level: last.level, idx: Number(last.idx) };
    }
    for (const key of built.keys()) if (!seen.has(key)) out.push({ projection: 'trust_log_nodes', key, field: 'hash', expected: built.get(key), stored: 'no node' });
    return out;
  }

  async function run() {
    const started = performance.now();
    const now = clock.now();
    const result = await deps.snapshot((snap) => check(snap, now));
    const out = { check_id: newOrderedId(), checked_at: iso(now), ...result, duration_ms: Math.round(performance.now() - started) };
    await db.insertInto('trust_parity_checks').values({ check_id: out.check_id, checked_at: now, result: JSON.stringify(out) }).execute();
    return out;
  }

  async function check(snap: SnapshotDb, now: number) {
    const size = await store.size(snap);
    const replayers = deps.projections.map((f) => f());
    const mismatches: Mismatch[] = [];
    // The tree is rebuilt from the entries' own bytes with a stack of complete subtrees; every
    // complete subtree is then compared with the stored hash (a proof reads those).
    const stack: { level: number; hash: Buffer }[] = [];
    const built = new Map<string, string>();
    for (let start = 0; start < size; start += PAGE) {
      const rows = await store.entries(start, Math.min(size, start + PAGE), snap);
      for (const r of rows) {
        const index = Number(r.log_index);
        const leaf = leafHash(Buffer.from(r.entry, 'utf8'));
        if (leaf.toString('hex') !== r.leaf_hash) mismatches.push({ projection: 'trust_log', key: String(index), field: 'leaf_hash', expected: leaf.toString('hex'), stored: r.leaf_hash });
        let node = { level: 0, hash: leaf };
        built.set(`0/${index}`, leaf.toString('hex'));
        while (stack.length > 0 && stack[stack.length - 1].level === node.level) {
          const left = stack.pop() as { level: number; hash: Buffer };
          node = { level: node.level + 1, hash: nodeHash(left.hash, node.hash) };
          built.set(`${node.level}/${Math.floor(index / 2 ** node.level)}`, node.hash.toString('hex'));
        }
        stack.push(node);
        const parsed = JSON.parse(r.entry) as { kind: string; at: string; agent_id: string | null; epoch: number | null; data: Record<string, unknown>; index: number };
        if (parsed.index !== index) mismatches.push({ projection: 'trust_log', key: String(index), field: 'index', expected: index, stored: parsed.index });
        const entry: ReplayEntry = { index, kind: parsed.kind, at: Date.parse(parsed.at), agent_id: parsed.agent_id, epoch: parsed.epoch, data: parsed.data };
        for (const rp of replayers) rp.feed(entry);
      }
    }
    mismatches.push(...await diffNodes(built, snap));
    const agents = new Set<string>();
    for (const rp of replayers) {
      mismatches.push(...await rp.diff(now, snap));
      for (const a of rp.agents()) agents.add(a);
    }
    return {
      tree_size: size,
      entries_replayed: size,
      agents_checked: agents.size,
      mismatch_count: mismatches.length,
      mismatches: mismatches.slice(0, MAX_LISTED),
      ok: mismatches.length === 0,
    };
  }

  return {
    run,
    async latest() {
      // check_id is time-ordered by the wall clock: the newest run whatever the injected clock says.
      const row = await db.selectFrom('trust_parity_checks').select('result').orderBy('check_id', 'desc').limit(1).executeTakeFirst();
      return row ? JSON.parse(row.result) as unknown : undefined;
    },
  };
}
