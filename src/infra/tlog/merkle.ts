import { createHash } from 'node:crypto';

/**
 * RFC 9162 (Certificate Transparency 2.0) §2.1 Merkle tree over a storage-agnostic node store.
 *
 * The store keeps only hashes of complete subtrees (the C2SP tlog-tiles idea): node (level L, index i)
 * is the hash of leaves [i·2^L, (i+1)·2^L), and level 0 index i is leaf i's hash. Such a node never
 * changes once formed, so it can be written once and cached forever. Any other subtree root (the right
 * edge of a tree whose size is not a power of two) is folded from O(log n) complete ones on demand.
 *
 * Sizes and indexes are plain numbers up to 2^53: the arithmetic below uses multiplication and
 * division, never JavaScript's 32-bit bitwise operators.
 */

export interface StoredNode { level: number; index: number; hash: Buffer }
export interface NodeId { level: number; index: number }
/** Batch read of stored nodes, answered in the same order; throws if one is missing. One call = one round trip. */
export type NodeReader = (nodes: NodeId[]) => Promise<Buffer[]>;

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** SHA-256(0x00 || entry): the prefix keeps a leaf from ever being read as an interior node (second preimage). */
export const leafHash = (entryBytes: Uint8Array): Buffer => sha256(LEAF_PREFIX, entryBytes);
export const nodeHash = (left: Buffer, right: Buffer): Buffer => sha256(NODE_PREFIX, left, right);
/** MTH({}) = SHA-256 of the empty string. */
export const EMPTY_ROOT: Buffer = sha256();

function checkSize(name: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative safe integer, got ${n}`);
}

/** Largest power of two strictly below n (n ≥ 2): RFC 9162's split point k. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The complete subtrees covering [start, start + count), largest first. Every subtree an RFC 9162 proof
 * names starts at a multiple of a power of two ≥ its length, so the binary digits of `count` give the
 * decomposition directly.
 */
function rangeNodes(start: number, count: number): NodeId[] {
  const out: NodeId[] = [];
  let width = 1;
  let level = 0;
  while (width * 2 <= count) { width *= 2; level++; }
  let offset = start;
  for (let rest = count; rest > 0; width /= 2, level--) {
    if (rest >= width) {
      out.push({ level, index: offset / width });
      offset += width;
      rest -= width;
    }
  }
  return out;
}

/** MTH of a subtree from its complete parts (largest first): the right edge folds right to left. */
function foldRight(hashes: Buffer[]): Buffer {
  let acc = hashes[hashes.length - 1];
  for (let i = hashes.length - 2; i >= 0; i--) acc = nodeHash(hashes[i], acc);
  return acc;
}

/** Hashes of the subtrees [start, start+count) (each count ≥ 1), with a single read for all of them. */
async function subtreeRoots(ranges: Array<[start: number, count: number]>, get: NodeReader): Promise<Buffer[]> {
  if (ranges.length === 0) return [];
  const parts = ranges.map(([start, count]) => rangeNodes(start, count));
  const wanted = parts.flat();
  const got = await get(wanted);
  if (got.length !== wanted.length) throw new Error(`node reader answered ${got.length} hashes for ${wanted.length} nodes`);
  let at = 0;
  return parts.map((p) => {
    const slice = got.slice(at, at + p.length);
    at += p.length;
    return foldRight(slice);
  });
}

/**
 * The nodes that become complete when leaf `index` (= the old tree size) is appended: the leaf itself,
 * then one parent per trailing 1-bit of `index` (each time the new node is a right child). The left
 * siblings are read in one batch; with index even no read happens at all.
 */
export async function nodesCompletedByAppend(index: number, leaf: Buffer, get: NodeReader): Promise<StoredNode[]> {
  checkSize('index', index);
  const siblings: NodeId[] = [];
  for (let i = index; i % 2 === 1; i = (i - 1) / 2) siblings.push({ level: siblings.length, index: i - 1 });
  const left = siblings.length ? await get(siblings) : [];
  if (left.length !== siblings.length) throw new Error(`node reader answered ${left.length} hashes for ${siblings.length} nodes`);
  const out: StoredNode[] = [{ level: 0, index, hash: leaf }];
  let hash = leaf;
  for (let l = 0; l < siblings.length; l++) {
    hash = nodeHash(left[l], hash);
    out.push({ level: l + 1, index: siblings[l].index / 2, hash }); // the sibling is the even (left) child
  }
  return out;
}

/** Root of the tree of size n: one read of the ≤ log2(n)+1 complete subtrees that partition it. */
export async function rootAt(size: number, get: NodeReader): Promise<Buffer> {
  checkSize('size', size);
  if (size === 0) return EMPTY_ROOT;
  const [root] = await subtreeRoots([[0, size]], get);
  return root;
}

/**
 * RFC 9162 §2.1.3.1 PATH(m, D[n]) as subtree ranges, leaf-side first. Recursion: k = split point;
 * m < k → PATH(m, D[0:k]) : MTH(D[k:n]), else PATH(m−k, D[k:n]) : MTH(D[0:k]).
 */
function inclusionRanges(index: number, size: number): Array<[number, number]> {
  const rootSide: Array<[number, number]> = [];
  let lo = 0;
  let n = size;
  let m = index;
  while (n > 1) {
    const k = splitPoint(n);
    if (m < k) { rootSide.push([lo + k, n - k]); n = k; }
    else { rootSide.push([lo, k]); lo += k; m -= k; n -= k; }
  }
  return rootSide.reverse();
}

/** RFC 9162 §2.1.3.1 inclusion proof (audit path) for leaf `index` in the tree of size `size`: one read. */
export async function inclusionProof(index: number, size: number, get: NodeReader): Promise<Buffer[]> {
  checkSize('index', index);
  checkSize('size', size);
  if (index >= size) throw new RangeError(`leaf ${index} is not in a tree of size ${size}`);
  return subtreeRoots(inclusionRanges(index, size), get);
}

/**
 * RFC 9162 §2.1.4.1 SUBPROOF(m, D[n], b) as subtree ranges, leaf-side first. m == n: {} when b, else
 * {MTH(D[m])}; m ≤ k: SUBPROOF(m, D[0:k], b) : MTH(D[k:n]); m > k: SUBPROOF(m−k, D[k:n], false) : MTH(D[0:k]).
 */
function consistencyRanges(first: number, second: number): Array<[number, number]> {
  const rootSide: Array<[number, number]> = [];
  let lo = 0;
  let n = second;
  let m = first;
  let whole = true; // b: is this subtree's old part the whole old tree (whose root the verifier has)?
  while (m < n) {
    const k = splitPoint(n);
    if (m <= k) { rootSide.push([lo + k, n - k]); n = k; }
    else { rootSide.push([lo, k]); lo += k; m -= k; n -= k; whole = false; }
  }
  if (!whole) rootSide.push([lo, m]);
  return rootSide.reverse();
}

/** RFC 9162 §2.1.4.1 consistency proof between sizes first ≤ second: one read. Empty when first is 0 or equal to second. */
export async function consistencyProof(first: number, second: number, get: NodeReader): Promise<Buffer[]> {
  checkSize('first', first);
  checkSize('second', second);
  if (first > second) throw new RangeError(`first size ${first} exceeds second size ${second}`);
  if (first === 0 || first === second) return [];
  return subtreeRoots(consistencyRanges(first, second), get);
}

const isHash = (b: unknown): b is Buffer => Buffer.isBuffer(b) && b.length === 32;
const isEven = (n: number) => n % 2 === 0;
const half = (n: number) => Math.floor(n / 2);

/** RFC 9162 §2.1.3.2, step for step. Pure; false on any malformed input. */
export function verifyInclusion(index: number, size: number, leaf: Buffer, proof: Buffer[], root: Buffer): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  if (!isHash(leaf) || !isHash(root) || !Array.isArray(proof) || !proof.every(isHash)) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (!isEven(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (isEven(fn) && fn !== 0) { fn = half(fn); sn = half(sn); }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && r.equals(root);
}

/**
 * RFC 9162 §2.1.4.2, step for step. Pure; false on any malformed input. Sizes 0 and equal sizes take an
 * empty proof; an empty tree's root must be EMPTY_ROOT (stricter than the RFC, which leaves it open).
 */
export function verifyConsistency(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, proof: Buffer[]): boolean {
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first < 0 || first > second) return false;
  if (!isHash(firstRoot) || !isHash(secondRoot) || !Array.isArray(proof) || !proof.every(isHash)) return false;
  if (first === 0) return proof.length === 0 && firstRoot.equals(EMPTY_ROOT);
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (proof.length === 0) return false;
  // A power-of-two first tree is a complete subtree of the second: its root is the path's start.
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : proof;
  let fn = first - 1;
  let sn = second - 1;
  while (!isEven(fn)) { fn = half(fn); sn = half(sn); }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (!isEven(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (isEven(fn) && fn !== 0) { fn = half(fn); sn = half(sn); }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}

function isPowerOfTwo(n: number): boolean {
  while (n > 1 && isEven(n)) n /= 2;
  return n === 1;
}
