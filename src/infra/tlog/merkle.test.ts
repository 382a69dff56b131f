import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  consistencyProof, EMPTY_ROOT, inclusionProof, leafHash, nodeHash, nodesCompletedByAppend, rootAt,
  verifyConsistency, verifyInclusion, type NodeId, type NodeReader,
} from './merkle';

const h = (hex: string) => Buffer.from(hex, 'hex');
const hexes = (bufs: Buffer[]) => bufs.map((b) => b.toString('hex'));

/** In-memory node store, counting reads (each read stands for a database round trip). */
function memoryStore() {
  const nodes = new Map<string, Buffer>();
  const stats = { calls: 0, nodes: 0 };
  const get: NodeReader = async (ids: NodeId[]) => {
    stats.calls++;
    stats.nodes += ids.length;
    return ids.map(({ level, index }) => {
      const v = nodes.get(`${level}/${index}`);
      if (!v) throw new Error(`missing node ${level}/${index}`);
      return v;
    });
  };
  let size = 0;
  const append = async (entry: Uint8Array) => {
    for (const n of await nodesCompletedByAppend(size, leafHash(entry), get)) {
      const key = `${n.level}/${n.index}`;
      if (nodes.has(key)) throw new Error(`node ${key} written twice`);
      nodes.set(key, n.hash);
    }
    size++;
  };
  return { nodes, stats, get, append };
}

// ---- Published reference vectors --------------------------------------------------------------------------
// Leaves, node hashes and roots: transparency-dev/merkle, testonly/constants.go (LeafInputs, NodeHashes,
// RootHashes). Inclusion and consistency proofs: transparency-dev/merkle, proof/verify_test.go
// (inclusionProofs, consistencyProofs; there `leaf` is 1-based). Same data as Google's certificate-transparency.
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(h);
const NODE_HASHES = [
  ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
    '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7', '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
    'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
    'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f', '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1'],
  ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
    '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0'],
  ['d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'],
  ['5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328'],
];
const ROOTS = [ // sizes 0..8
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const INCLUSION: Array<{ index: number; size: number; proof: string[] }> = [ // index 0-based here
  { index: 0, size: 1, proof: [] },
  { index: 0, size: 8, proof: ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'] },
  { index: 5, size: 8, proof: ['bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7'] },
  { index: 2, size: 3, proof: ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'] },
  { index: 1, size: 5, proof: ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b'] },
];
const CONSISTENCY: Array<{ first: number; second: number; proof: string[] }> = [
  { first: 1, second: 1, proof: [] },
  { first: 1, second: 8, proof: ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'] },
  { first: 6, second: 8, proof: ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7'] },
  { first: 2, second: 5, proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b'] },
  { first: 6, second: 7, proof: ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7'] },
];

describe('RFC 6962 reference vectors (transparency-dev/merkle)', () => {
  test('empty root and leaf/node hashing', () => {
    expect(EMPTY_ROOT.toString('hex')).toBe(ROOTS[0]);
    expect(hexes(LEAVES.map(leafHash))).toEqual(NODE_HASHES[0]);
    expect(nodeHash(h(NODE_HASHES[0][0]), h(NODE_HASHES[0][1])).toString('hex')).toBe(NODE_HASHES[1][0]);
  });

  test('appending the 8 leaves stores exactly the published complete-subtree nodes', async () => {
    const s = memoryStore();
    for (const leaf of LEAVES) await s.append(leaf);
    const expected = new Map(NODE_HASHES.flatMap((level, l) => level.map((hex, i) => [`${l}/${i}`, hex] as const)));
    expect(new Map([...s.nodes].map(([k, v]) => [k, v.toString('hex')]))).toEqual(expected);
  });

  test('roots for sizes 0..8', async () => {
    const s = memoryStore();
    for (const leaf of LEAVES) await s.append(leaf);
    for (let n = 0; n <= 8; n++) expect((await rootAt(n, s.get)).toString('hex')).toBe(ROOTS[n]);
  });

  test.each(INCLUSION)('inclusion proof for leaf $index in size $size', async ({ index, size, proof }) => {
    const s = memoryStore();
    for (const leaf of LEAVES) await s.append(leaf);
    expect(hexes(await inclusionProof(index, size, s.get))).toEqual(proof);
    expect(verifyInclusion(index, size, leafHash(LEAVES[index]), proof.map(h), h(ROOTS[size]))).toBe(true);
    expect(verifyInclusion(index, size, leafHash(LEAVES[index]), proof.map(h), h(ROOTS[size - 1]))).toBe(false);
  });

  test.each(CONSISTENCY)('consistency proof $first → $second', async ({ first, second, proof }) => {
    const s = memoryStore();
    for (const leaf of LEAVES) await s.append(leaf);
    expect(hexes(await consistencyProof(first, second, s.get))).toEqual(proof);
    expect(verifyConsistency(first, second, h(ROOTS[first]), h(ROOTS[second]), proof.map(h))).toBe(true);
    if (first !== second) expect(verifyConsistency(first, second, h(ROOTS[first - 1]), h(ROOTS[second]), proof.map(h))).toBe(false);
  });

  test('edge cases of the verifiers', () => {
    const empty = h(ROOTS[0]);
    const one = h(ROOTS[1]);
    expect(verifyConsistency(0, 0, empty, empty, [])).toBe(true);
    expect(verifyConsistency(0, 5, empty, h(ROOTS[5]), [])).toBe(true);
    expect(verifyConsistency(0, 5, one, h(ROOTS[5]), [])).toBe(false); // an empty tree has one root
    expect(verifyConsistency(1, 1, one, one, [])).toBe(true);
    expect(verifyConsistency(1, 1, one, empty, [])).toBe(false);
    expect(verifyConsistency(1, 1, one, one, [empty])).toBe(false);
    expect(verifyConsistency(2, 1, h(ROOTS[2]), one, [])).toBe(false);
    expect(verifyConsistency(1, 2, one, h(ROOTS[2]), [])).toBe(false);
    expect(verifyInclusion(0, 0, one, [], empty)).toBe(false);
    expect(verifyInclusion(1, 1, one, [], one)).toBe(false);
    expect(verifyInclusion(0, 1, one, [], one)).toBe(true);
    expect(verifyInclusion(0, 1, one, [], Buffer.alloc(0))).toBe(false);
  });
});

// ---- Property test against a naive recursive MTH ----------------------------------------------------------

/** RFC 9162 §2.1.1 MTH, by the definition. */
function naiveMth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return createHash('sha256').digest();
  if (leaves.length === 1) return leafHash(leaves[0]);
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(naiveMth(leaves.slice(0, k)), naiveMth(leaves.slice(k)));
}

const flip = (b: Buffer) => { const c = Buffer.from(b); c[7] ^= 0x20; return c; };

describe('property test, sizes 1..70', () => {
  test('roots match the naive MTH; every inclusion and consistency proof verifies and tampering fails', async () => {
    const s = memoryStore();
    const entries = Array.from({ length: 70 }, (_, i) => Buffer.from(`entry ${i} ${'x'.repeat(i % 5)}`));
    const roots: Buffer[] = [EMPTY_ROOT];
    const log2 = (n: number) => Math.ceil(Math.log2(n + 1));
    for (let n = 1; n <= 70; n++) {
      await s.append(entries[n - 1]);
      s.stats.calls = 0;
      const root = await rootAt(n, s.get);
      expect(root.equals(naiveMth(entries.slice(0, n))), `root of size ${n}`).toBe(true);
      expect(s.stats.calls).toBe(1);
      roots.push(root);
    }
    for (let n = 1; n <= 70; n++) {
      for (let i = 0; i < n; i++) {
        const leaf = leafHash(entries[i]);
        s.stats.calls = 0;
        s.stats.nodes = 0;
        const proof = await inclusionProof(i, n, s.get);
        expect(s.stats.calls).toBeLessThanOrEqual(1);
        expect(s.stats.nodes).toBeLessThanOrEqual(2 * log2(n));
        expect(verifyInclusion(i, n, leaf, proof, roots[n]), `inclusion ${i} in ${n}`).toBe(true);
        expect(verifyInclusion(i, n, flip(leaf), proof, roots[n])).toBe(false);
        expect(verifyInclusion(i, n, leaf, proof, flip(roots[n]))).toBe(false);
        if (n > 1) expect(verifyInclusion((i + 1) % n, n, leaf, proof, roots[n])).toBe(false);
        if (n < 70) expect(verifyInclusion(i, n + 1, leaf, proof, roots[n + 1])).toBe(false);
        for (let j = 0; j < proof.length; j++) {
          const bad = proof.slice();
          bad[j] = flip(bad[j]);
          expect(verifyInclusion(i, n, leaf, bad, roots[n])).toBe(false);
        }
        if (proof.length) expect(verifyInclusion(i, n, leaf, proof.slice(0, -1), roots[n])).toBe(false);
        expect(verifyInclusion(i, n, leaf, [...proof, roots[n]], roots[n])).toBe(false);
      }
      for (let m = 0; m <= n; m++) {
        s.stats.calls = 0;
        s.stats.nodes = 0;
        const proof = await consistencyProof(m, n, s.get);
        expect(s.stats.calls).toBeLessThanOrEqual(1);
        expect(s.stats.nodes).toBeLessThanOrEqual(2 * log2(n));
        expect(verifyConsistency(m, n, roots[m], roots[n], proof), `consistency ${m} → ${n}`).toBe(true);
        if (m === 0 || m === n) { expect(proof).toEqual([]); continue; }
        expect(verifyConsistency(m, n, flip(roots[m]), roots[n], proof)).toBe(false);
        expect(verifyConsistency(m, n, roots[m], flip(roots[n]), proof)).toBe(false);
        expect(verifyConsistency(m, n, roots[m - 1], roots[n], proof)).toBe(false);
        expect(verifyConsistency(m - 1, n, roots[m - 1], roots[n], proof)).toBe(false);
        for (let j = 0; j < proof.length; j++) {
          const bad = proof.slice();
          bad[j] = flip(bad[j]);
          expect(verifyConsistency(m, n, roots[m], roots[n], bad)).toBe(false);
        }
        expect(verifyConsistency(m, n, roots[m], roots[n], proof.slice(0, -1))).toBe(false);
        expect(verifyConsistency(m, n, roots[m], roots[n], [...proof, roots[n]])).toBe(false);
      }
    }
  });

  test('reading a size beyond the store fails loudly, and bad arguments are refused', async () => {
    const s = memoryStore();
    for (let i = 0; i < 5; i++) await s.append(Buffer.from([i]));
    await expect(rootAt(6, s.get)).rejects.toThrow(/missing node/);
    await expect(inclusionProof(5, 5, s.get)).rejects.toThrow(RangeError);
    await expect(consistencyProof(4, 3, s.get)).rejects.toThrow(RangeError);
    await expect(rootAt(-1, s.get)).rejects.toThrow(RangeError);
    await expect(rootAt(1.5, s.get)).rejects.toThrow(RangeError);
  });

  test('appending to an even index reads nothing; to index 2^k−1 reads the k left siblings in one call', async () => {
    const s = memoryStore();
    for (let i = 0; i < 15; i++) await s.append(Buffer.from([i]));
    s.stats.calls = 0;
    const nodes = await nodesCompletedByAppend(15, leafHash(Buffer.from([15])), s.get);
    expect(s.stats.calls).toBe(1);
    expect(nodes.map(({ level, index }) => [level, index])).toEqual([[0, 15], [1, 7], [2, 3], [3, 1], [4, 0]]);
    s.stats.calls = 0;
    await nodesCompletedByAppend(16, leafHash(Buffer.from([16])), s.get);
    expect(s.stats.calls).toBe(0);
  });
});
