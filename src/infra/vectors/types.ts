import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema';

export type Queryable = Kysely<Database> | Transaction<Database>;

/** One vector of one item. `ownerId` scopes search (an agent id; '' for shared collections such as the commons). */
export interface VectorRecord {
  collection: string;
  ownerId: string;
  itemId: string;
  /** Version of the item the vector was made from; an older version never replaces a newer one. */
  itemVersion: number;
  modelId: string;
  /** L2-normalised. */
  vector: Float32Array;
}

export interface VectorQuery {
  collection: string;
  ownerId: string;
  /** Only vectors of this model are compared: vectors of two models are never mixed. */
  modelId: string;
  vector: Float32Array;
  limit: number;
}

export interface VectorHit {
  itemId: string;
  /** Cosine similarity of the unit vectors, -1 to 1. */
  cosine: number;
}

/**
 * Nearest-neighbour search over stored vectors, owner-scoped. Every implementation keeps all vectors
 * in `vector_items` (the source of truth); `kind` says what answers queries.
 */
export interface VectorIndex {
  readonly kind: 'resident' | 'pgvector' | 'exact';
  /** Inside the caller's transaction when `q` is one. Returns how many records were stored (newer ones win). */
  upsert(records: VectorRecord[], q?: Queryable): Promise<number>;
  remove(collection: string, ownerId: string, itemIds: string[], q?: Queryable): Promise<void>;
  query(q: VectorQuery): Promise<VectorHit[]>;
  /** How many stored vectors of a collection were made by another model than `modelId`. */
  countStale(collection: string, modelId: string): Promise<number>;
}

export class VectorIndexError extends Error {
  readonly code = 'VECTOR_INDEX_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'VectorIndexError';
  }
}

export function toBytes(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

export function fromBytes(b: Uint8Array): Float32Array {
  // Copy: the driver's buffer may be unaligned or shared.
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

/**
 * The floats of a stored vector for reading at once and letting go: a view over the driver's buffer
 * when it is aligned (better-sqlite3 and pg give each blob its own), a copy otherwise. A search
 * reads hundreds of vectors; copying each doubled the garbage it leaves. Keep `fromBytes` for a
 * vector that outlives the row.
 */
export function readFloats(b: Uint8Array): Float32Array {
  return b.byteOffset % 4 === 0 && b.byteLength % 4 === 0 ? new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4) : fromBytes(b);
}

/** Partition of an accelerated index: collection, owner and model together. */
export const partitionOf = (collection: string, ownerId: string, modelId: string) => `${collection}\u001f${ownerId}\u001f${modelId}`;
