/**
 * An RFC 9162 verifier written from the RFC text (§2.1.3.2 inclusion, §2.1.4.2 consistency), sharing
 * no code with svc's Merkle library: tests check svc's proofs against it.
 */
import { createHash } from 'node:crypto';

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
export const leafOf = (bytes: Buffer) => sha(Buffer.from([0]), bytes);
const node = (l: Buffer, r: Buffer) => sha(Buffer.from([1]), l, r);

/** The root an inclusion proof leads to, or null. */
export function rootFromInclusion(index: number, size: number, leaf: Buffer, proof: Buffer[]): Buffer | null {
  if (index >= size) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) { fn >>= 1; sn >>= 1; }
    } else {
      r = node(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 ? r : null;
}

/** Whether a consistency proof links the two roots. */
export function consistent(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, proof: Buffer[]): boolean {
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  let path = [...proof];
  if ((first & (first - 1)) === 0) path = [firstRoot, ...path];
  if (path.length === 0) return false;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) { fn >>= 1; sn >>= 1; }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      while (fn % 2 === 0 && fn !== 0) { fn >>= 1; sn >>= 1; }
    } else {
      sr = node(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}
