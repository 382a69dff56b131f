/**
 * Resident sign-code index (SQLite): a compact code of every vector of a partition (collection,
 * owner, model) held in this process, scanned in full by each query to pick candidates. These are
 * ranked on a one-byte-a-dimension copy of each vector, also held here, and the best few beyond the
 * limit are re-ranked by exact cosine on their float32 vectors read from `vector_items` — returned
 * scores are exact, and only candidates still stored under the query's partition count.
 *
 * The code of a vector v, in a partition with per-dimension mean μ and spread σ (both taken from a
 * sample of it): the sign bits of r = v − μ (one bit per dimension, 64 bytes for 512-d) and one scale
 * s = ‖r‖² / Σ|rᵢ|σᵢ. r is approximated along u = sign(r)∘σ, and q·r is estimated as s · q·u, which is
 * exact when q = r. For a query q, q·v = q·μ + q·r and q·μ is the same for every vector of the
 * partition, so vectors are ranked by that estimate. The query is not quantised (an asymmetric
 * estimate, far closer to the true order than a Hamming distance between two sign codes), and q·u is
 * read from per-byte tables of q∘σ built for the query: 64 table reads per 512-d vector, four per
 * 32-bit word of the code. Centring matters: a text model's embeddings lie near one mean direction,
 * so uncentred signs mostly repeat the mean's; σ weighs the dimensions that vary most.
 *
 * The codes are built from `vector_items` on a partition's first query (one pass over its rows) and
 * kept in step by `put` (a stored or replaced vector, at once) and `drop`. A drop is only counted:
 * a dropped or rolled-back vector is skipped when candidates are read back (the read checks the
 * partition), and once drops reach a fifth of a partition it is rebuilt on its next query, as it is
 * when it has doubled since its mean was taken from fewer than MEAN_SAMPLE vectors. A replacement
 * rolled back keeps the newer code until the next rebuild: its candidates are still re-ranked
 * exactly. SQLite is one process (docs/decisions.md), so this process sees every write. Partitions
 * are evicted least recently queried first beyond `budgetBytes`; one that alone would not fit is
 * searched by an exact scan.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Accelerator } from './accelerated';
import { topK } from './items';
import { readFloats, type Queryable, type VectorHit } from './types';

/**
 * Candidates re-ranked exactly: CANDIDATES_PER_RESULT per result wanted, at least MIN_CANDIDATES,
 * and at least PARTITION_SHARE of the partition (the estimate's errors let more vectors overtake
 * the true top 20 as a partition grows). Measured in bench/retrieval/vector-exactness.ts; docs/memory.md.
 */
export const MIN_CANDIDATES = 400;
export const PARTITION_SHARE = 1 / 125;
const CANDIDATES_PER_RESULT = 4;
/** Of the candidates, ranked by their one-byte copies, the best `limit` plus this many (or half of `limit`, if more) are re-ranked on their stored floats. */
const EXACT_MARGIN = 16;
/** A partition is rebuilt once drops reach this share of it. */
const DROPPED_SHARE = 0.2;
/** The mean is taken from at most this many vectors; a partition whose mean came from fewer is rebuilt each time it doubles. */
const MEAN_SAMPLE = 2048;
/** Rows read per page when a partition is built or scanned; the event loop runs between pages. */
const PAGE_ROWS = 4096;

class Partition {
  /** 32-bit words per code: one bit per dimension. */
  readonly words: number;
  n = 0;
  dropped = 0;
  ids: Float64Array;
  codes: Uint32Array;
  scales: Float32Array;
  /** Every vector again at one byte a dimension (vᵢ ≈ bytes·step), for ranking the candidates without reading them. */
  bytesOf: Int8Array;
  steps: Float32Array;
  private readonly slots = new Map<number, number>();

  constructor(readonly dims: number, readonly mean: Float32Array, readonly spread: Float32Array, readonly sizeAtBuild: number, capacity: number) {
    this.words = Math.ceil(dims / 32);
    const cap = Math.max(16, capacity);
    this.ids = new Float64Array(cap);
    this.codes = new Uint32Array(cap * this.words);
    this.scales = new Float32Array(cap);
    this.bytesOf = new Int8Array(cap * dims);
    this.steps = new Float32Array(cap);
  }

  get bytes(): number {
    // typed arrays plus the id → slot map (about 40 bytes an entry)
    return this.ids.byteLength + this.codes.byteLength + this.scales.byteLength + this.bytesOf.byteLength + this.steps.byteLength + this.n * 40;
  }

  get stale(): boolean {
    return this.dropped >= Math.max(1, this.n * DROPPED_SHARE)
      || (this.sizeAtBuild < MEAN_SAMPLE && this.n > 2 * Math.max(this.sizeAtBuild, 8));
  }

  set(id: number, v: Float32Array): void {
    if (v.length !== this.dims) return;
    let slot = this.slots.get(id);
    if (slot === undefined) {
      if (this.n === this.scales.length) this.grow();
      slot = this.n++;
      this.slots.set(id, slot);
      this.ids[slot] = id;
    }
    this.encode(slot, v);
  }

  private grow(): void {
    const cap = this.scales.length * 2;
    const ids = new Float64Array(cap);
    ids.set(this.ids);
    const codes = new Uint32Array(cap * this.words);
    codes.set(this.codes);
    const scales = new Float32Array(cap);
    scales.set(this.scales);
    const bytesOf = new Int8Array(cap * this.dims);
    bytesOf.set(this.bytesOf);
    const steps = new Float32Array(cap);
    steps.set(this.steps);
    this.ids = ids;
    this.codes = codes;
    this.scales = scales;
    this.bytesOf = bytesOf;
    this.steps = steps;
  }

  private encode(slot: number, v: Float32Array): void {
    const { dims, mean, spread, codes, words } = this;
    const at = slot * words;
    codes.fill(0, at, at + words);
    let sq = 0;
    let along = 0; // r·u, u = sign(r)∘σ
    for (let i = 0; i < dims; i++) {
      const r = v[i]! - mean[i]!;
      sq += r * r;
      along += Math.abs(r) * spread[i]!;
      if (r > 0) codes[at + (i >> 5)]! |= 1 << (i & 31);
    }
    this.scales[slot] = along > 0 ? sq / along : 0;
    let max = 0;
    for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(v[i]!));
    const step = max > 0 ? max / 127 : 1;
    const to = slot * dims;
    for (let i = 0; i < dims; i++) this.bytesOf[to + i] = Math.round(v[i]! / step);
    this.steps[slot] = step;
  }

  /**
   * Row ids of the given slots, best first by q·v over the one-byte copies. The rounding moves a
   * 512-d unit vector's product by about 5·10⁻⁴ (its step is under 1/127 of its largest component),
   * so the true best are among a few more than asked for; their exact products are then computed
   * from the stored floats.
   */
  nearest(q: Float32Array, slots: Int32Array): number[] {
    const { dims, bytesOf, steps, ids } = this;
    const scored = new Array<{ slot: number; dot: number }>(slots.length);
    for (let k = 0; k < slots.length; k++) {
      const slot = slots[k]!;
      const at = slot * dims;
      let dot = 0;
      for (let i = 0; i < dims; i++) dot += q[i]! * bytesOf[at + i]!;
      scored[k] = { slot, dot: dot * steps[slot]! };
    }
    scored.sort((a, b) => b.dot - a.dot);
    return scored.map((x) => ids[x.slot]!);
  }

  /** Slots of the `count` vectors with the highest estimated q·(v − μ). */
  candidates(q: Float32Array, count: number): Int32Array {
    const { n, words, codes, scales } = this;
    if (n <= count) return Int32Array.from({ length: n }, (_, i) => i);
    // table[j·256 + x] = Σ of q over the bits set in byte value x at byte j
    const bytes = words * 4;
    const table = new Float64Array(bytes * 256);
    let total = 0;
    for (let j = 0; j < bytes; j++) {
      const base = j << 8;
      for (let x = 1; x < 256; x++) {
        const low = x & -x;
        const d = (j << 3) + 31 - Math.clz32(low);
        table[base + x] = table[base + (x ^ low)]! + (d < q.length ? q[d]! * this.spread[d]! : 0);
      }
      total += table[base + 255]!;
    }
    // estimate = scale · q·u = scale · (Σ_set qσ − Σ_unset qσ) = scale · (2·Σ_set qσ − total); kept in a min-heap of `count`
    const heapScore = new Float64Array(count);
    const heapSlot = new Int32Array(count);
    let size = 0;
    for (let s = 0; s < n; s++) {
      let sum = 0;
      const at = s * words;
      // Byte k of word w holds dimensions 32w + 8k … 32w + 8k + 7: table row 4w + k.
      for (let w = 0; w < words; w++) {
        const c = codes[at + w]!;
        const row = w << 10;
        sum += table[row | (c & 255)]! + table[row | 256 | ((c >>> 8) & 255)]! + table[row | 512 | ((c >>> 16) & 255)]! + table[row | 768 | (c >>> 24)]!;
      }
      const est = scales[s]! * (2 * sum - total);
      if (size < count) {
        let i = size++;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (heapScore[p]! <= est) break;
          heapScore[i] = heapScore[p]!;
          heapSlot[i] = heapSlot[p]!;
          i = p;
        }
        heapScore[i] = est;
        heapSlot[i] = s;
      } else if (est > heapScore[0]!) {
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= count) break;
          const c = l + 1 < count && heapScore[l + 1]! < heapScore[l]! ? l + 1 : l;
          if (heapScore[c]! >= est) break;
          heapScore[i] = heapScore[c]!;
          heapSlot[i] = heapSlot[c]!;
          i = c;
        }
        heapScore[i] = est;
        heapSlot[i] = s;
      }
    }
    return heapSlot.subarray(0, size);
  }
}

const topOf = (hits: VectorHit[], limit: number) =>
  hits.sort((a, b) => b.cosine - a.cosine || (a.itemId < b.itemId ? -1 : 1)).slice(0, limit);

export class ResidentAccelerator implements Accelerator {
  readonly kind = 'resident' as const;
  /** Loaded partitions, least recently queried first. */
  private readonly parts = new Map<string, Partition>();
  /** Partitions being built: queries wait for them, writes go to them too. */
  private readonly building = new Map<string, { part?: Partition; done: Promise<Partition | undefined> }>();
  private statements?: Record<'sample' | 'page' | 'read', BetterSqlite3.Statement>;
  /** Partitions whose codes would not fit the budget: searched by exact scan. */
  private readonly oversized = new Set<string>();

  /** `candidates`: at least `min` re-ranked exactly and `share` of the partition (benchmarks vary them). */
  constructor(
    private readonly conn: BetterSqlite3.Database,
    private readonly budgetBytes: number,
    private readonly candidates = { min: MIN_CANDIDATES, share: PARTITION_SHARE },
  ) {}

  private get sql() {
    const where = 'collection = ? and owner_id = ? and model_id = ?';
    return this.statements ??= {
      sample: this.conn.prepare(`select embedding from vector_items where ${where} limit ${MEAN_SAMPLE}`),
      page: this.conn.prepare(`select id, item_id, embedding from vector_items where ${where} and id > ? order by id limit ${PAGE_ROWS}`),
      // CROSS JOIN keeps json_each outside: the planner cannot tell it is small and might scan the table instead.
      read: this.conn.prepare(`select v.item_id, v.embedding from json_each(?) j cross join vector_items v on v.id = j.value
        where v.collection = ? and v.owner_id = ? and v.model_id = ?`),
    };
  }

  async put(_q: Queryable, id: number, partition: string, vector: Float32Array): Promise<void> {
    this.parts.get(partition)?.set(id, vector);
    this.building.get(partition)?.part?.set(id, vector);
  }

  async drop(_q: Queryable, ids: number[], collection: string, ownerId: string): Promise<void> {
    if (ids.length === 0) return;
    const prefix = `${collection}\u001f${ownerId}\u001f`;
    for (const [key, p] of this.parts) if (key.startsWith(prefix)) p.dropped += ids.length;
    for (const [key, b] of this.building) if (key.startsWith(prefix) && b.part) b.part.dropped += ids.length;
  }

  async knn(_q: Queryable, partition: string, vector: Float32Array, limit: number): Promise<VectorHit[]> {
    const [collection, owner, model] = partition.split('\u001f') as [string, string, string];
    const part = await this.partition(partition, vector.length);
    if (!part) return this.exact(collection, owner, model, vector, limit);
    if (part.n === 0) return [];
    const { min, share } = this.candidates;
    // Plus as many as were dropped since the build: their codes, still scanned, cannot crowd out live ones.
    const slots = part.candidates(vector, Math.max(min, limit * CANDIDATES_PER_RESULT, Math.ceil(part.n * share)) + part.dropped);
    const ranked = part.nearest(vector, slots);
    const want = limit + Math.max(EXACT_MARGIN, Math.ceil(limit / 2));
    // Codes of removed (or rolled-back) vectors stay until a rebuild and are not read back: read on
    // down the ranking until `want` are found or the candidates run out.
    const rows: { item_id: string; embedding: Uint8Array }[] = [];
    for (let from = 0, take = want; from < ranked.length && rows.length < want; from += take, take = want - rows.length + EXACT_MARGIN) {
      rows.push(...this.sql.read.all(JSON.stringify(ranked.slice(from, from + take)), collection, owner, model) as typeof rows);
    }
    return topK(vector, rows.map((r) => ({ itemId: r.item_id, vector: readFloats(r.embedding) })), limit);
  }

  /** The partition's codes, built from vector_items when missing or stale; undefined when they would not fit the budget. */
  private async partition(key: string, dims: number): Promise<Partition | undefined> {
    if (this.oversized.has(key)) return undefined;
    const current = this.parts.get(key);
    if (current && !current.stale && current.dims === dims) {
      this.parts.delete(key); // re-inserted: most recently used last
      this.parts.set(key, current);
      return current;
    }
    let pending = this.building.get(key);
    if (!pending) {
      const started: { part?: Partition; done: Promise<Partition | undefined> } = { done: Promise.resolve(undefined) };
      started.done = this.build(key, dims, (p) => { started.part = p; }).finally(() => this.building.delete(key));
      this.building.set(key, started);
      pending = started;
    }
    const part = await pending.done;
    if (!part) {
      if (this.oversized.size >= 10_000) this.oversized.clear();
      this.oversized.add(key);
      this.parts.delete(key);
      return undefined;
    }
    if (part.dims !== dims) return this.partition(key, dims);
    this.parts.delete(key);
    this.parts.set(key, part);
    this.evict(key);
    return part;
  }

  /** Rows of a partition in pages by id, yielding to the event loop between pages. */
  private async *rows(collection: string, owner: string, model: string): AsyncGenerator<{ id: number; item_id: string; embedding: Uint8Array }> {
    let after = 0;
    for (;;) {
      const page = this.sql.page.all(collection, owner, model, after) as { id: number | bigint; item_id: string; embedding: Uint8Array }[];
      for (const r of page) yield { id: Number(r.id), item_id: r.item_id, embedding: r.embedding };
      if (page.length < PAGE_ROWS) return;
      after = Number(page[page.length - 1]!.id);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Exact scan, a page at a time, for a partition larger than the budget. */
  private async exact(collection: string, owner: string, model: string, q: Float32Array, limit: number): Promise<VectorHit[]> {
    let best: VectorHit[] = [];
    let floor = -Infinity;
    for await (const row of this.rows(collection, owner, model)) {
      if (row.embedding.byteLength !== q.length * 4) continue;
      const v = readFloats(row.embedding);
      let dot = 0;
      for (let i = 0; i < v.length; i++) dot += v[i]! * q[i]!;
      if (best.length >= limit && dot <= floor) continue;
      best.push({ itemId: row.item_id, cosine: dot });
      if (best.length >= 2 * limit) {
        best = topOf(best, limit);
        floor = best[best.length - 1]!.cosine;
      }
    }
    return topOf(best, limit);
  }

  /**
   * The mean and spread of up to MEAN_SAMPLE of the partition's vectors, then every row's code, a
   * page at a time: a large partition does not hold the event loop (100,000 vectors take about a
   * second). Writes made meanwhile reach the partition through `started`.
   */
  private async build(key: string, dims: number, started: (p: Partition) => void): Promise<Partition | undefined> {
    const [collection, owner, model] = key.split('\u001f') as [string, string, string];
    const sum = new Float64Array(dims);
    const squares = new Float64Array(dims);
    let sampled = 0;
    for (const row of this.sql.sample.iterate(collection, owner, model) as Iterable<{ embedding: Uint8Array }>) {
      if (row.embedding.byteLength !== dims * 4) continue;
      const v = readFloats(row.embedding);
      for (let i = 0; i < dims; i++) {
        sum[i]! += v[i]!;
        squares[i]! += v[i]! * v[i]!;
      }
      sampled++;
    }
    const mean = Float32Array.from(sum, (s) => (sampled ? s / sampled : 0));
    // σ per dimension; a floor keeps a dimension that did not vary in the sample in play.
    const spread = Float32Array.from(squares, (s, i) => Math.sqrt(Math.max(0, (sampled ? s / sampled : 0) - mean[i]! ** 2)));
    const floor = Math.max(1e-6, spread.reduce((a, b) => a + b, 0) / dims / 10);
    for (let i = 0; i < dims; i++) spread[i] = Math.max(spread[i]!, floor);
    const part = new Partition(dims, mean, spread, sampled, sampled);
    started(part);
    for await (const row of this.rows(collection, owner, model)) {
      if (row.embedding.byteLength === dims * 4) part.set(row.id, readFloats(row.embedding));
      if (part.n % 4096 === 0 && part.bytes > this.budgetBytes) return undefined;
    }
    return part;
  }

  private evict(keep: string): void {
    let total = 0;
    for (const p of this.parts.values()) total += p.bytes;
    for (const [key, p] of this.parts) {
      if (total <= this.budgetBytes) break;
      if (key === keep) continue;
      this.parts.delete(key);
      total -= p.bytes;
    }
  }
}
