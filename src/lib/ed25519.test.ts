import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { generateEd25519, hasSmallOrder, isCurvePoint, KeyFormatError, parseEd25519PublicKey, publicKeyPem, signEd25519, verifyEd25519 } from './ed25519';

// Ed25519 arithmetic in BigInt, only to check the small-order table independently of it.
const P = 2n ** 255n - 19n;
const mod = (a: bigint) => ((a % P) + P) % P;
const pow = (b: bigint, e: bigint) => { let r = 1n; b = mod(b); for (; e > 0n; e >>= 1n, b = mod(b * b)) if (e & 1n) r = mod(r * b); return r; };
const inv = (a: bigint) => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));
const SQRT_M1 = pow(2n, (P - 1n) / 4n);
type Pt = [bigint, bigint];
const add = ([x1, y1]: Pt, [x2, y2]: Pt): Pt => {
  const t = mod(D * x1 * x2 * y1 * y2);
  return [mod((x1 * y2 + x2 * y1) * inv(1n + t)), mod((y1 * y2 + x1 * x2) * inv(1n - t))];
};
/** The point with this y (and the even x), or undefined when y is not on the curve. */
function pointWithY(y: bigint): Pt | undefined {
  const u = mod(y * y - 1n), v = mod(D * y * y + 1n);
  let x = mod(u * pow(v, 3n) * pow(u * pow(v, 7n), (P - 5n) / 8n));
  if (mod(v * x * x) !== u) x = mod(x * SQRT_M1);
  if (mod(v * x * x) !== u) return undefined;
  return [x & 1n ? mod(-x) : x, y];
}
const yOf = (raw: Buffer) => { const b = Buffer.from(raw); b[31] &= 0x7f; return BigInt(`0x${Buffer.from(b).reverse().toString('hex')}`); };
const rawOfY = (y: bigint, sign = 0) => { const b = Buffer.from(y.toString(16).padStart(64, '0'), 'hex').reverse(); b[31] |= sign << 7; return b; };
const spkiPem = (raw: Buffer) => publicKeyPem(createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' }));

describe('small-order public keys', () => {
  test('the table holds exactly the y of every point of order dividing 8 (with their non-canonical forms)', () => {
    const order4: Pt = [SQRT_M1, 0n];
    const small: bigint[] = [0n, 1n, P - 1n];
    const y8 = yOf(Buffer.from('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', 'hex'));
    small.push(y8, mod(-y8));
    for (const y of small) {
      const pt = pointWithY(y)!;
      expect(pt).toBeDefined();
      let q = pt;
      for (let i = 0; i < 3; i++) q = add(q, q); // 8·P
      expect(q).toEqual([0n, 1n]);
    }
    // y8 is of order exactly 8: 4·P is (0, -1), not the neutral point.
    let q = pointWithY(y8)!;
    q = add(add(q, q), add(q, q));
    expect(q).toEqual([0n, P - 1n]);
    expect(add(order4, order4)).toEqual([0n, P - 1n]);
    // The small-order subgroup has 8 points: (0, ±1), (±√-1, 0) and four with y = ±y8: five y values, all refused,
    // in either sign, and the non-canonical encodings y + p that fit in 255 bits (p ≡ 0 and p + 1 ≡ 1).
    for (const y of [...small, P, P + 1n]) for (const sign of [0, 1]) expect(hasSmallOrder(rawOfY(y, sign))).toBe(true);
  });

  test('curve points: every real key is one; 32 bytes that decode to none (or to "-0", or y ≥ p) are refused as keys', () => {
    expect(pow(2n, (P - 1n) / 4n)).toBe(SQRT_M1); // the module's constants, recomputed here
    for (let i = 0; i < 200; i++) {
      const pem = generateEd25519().publicKeyPem;
      expect(isCurvePoint(createPublicKey(pem).export({ format: 'der', type: 'spki' }).subarray(12))).toBe(true);
    }
    const y2 = Buffer.alloc(32);
    y2[0] = 2; // y = 2: x² = 3 / (4d + 1) has no root
    expect(isCurvePoint(y2)).toBe(false);
    const big = Buffer.from(`f0${'ff'.repeat(30)}7f`, 'hex'); // y ≥ p: not canonical
    expect(isCurvePoint(big)).toBe(false);
    const negZero = Buffer.alloc(32);
    negZero[0] = 1;
    negZero[31] = 0x80; // y = 1 with the sign bit set: x = 0 cannot be negative
    expect(isCurvePoint(negZero)).toBe(false);
    // Independently: a y is a point exactly when (y² - 1)/(d y² + 1) is a square (Euler's criterion).
    for (let yv = 2n; yv < 40n; yv++) {
      const x2 = mod((yv * yv - 1n) * inv(mod(D * yv * yv + 1n)));
      const square = x2 === 0n || pow(x2, (P - 1n) / 2n) === 1n;
      const raw = Buffer.alloc(32);
      raw.writeUInt8(Number(yv), 0);
      expect(isCurvePoint(raw), `y = ${yv}`).toBe(square);
    }
    expect(() => parseEd25519PublicKey(y2.toString('base64'))).toThrow(/not a point of the Ed25519 curve/);
    expect(() => parseEd25519PublicKey(big.toString('base64'))).toThrow(KeyFormatError);
  });

  test('ordinary keys are not of small order', () => {
    for (let i = 0; i < 20; i++) {
      const pem = generateEd25519().publicKeyPem;
      expect(hasSmallOrder(createPublicKey(pem).export({ format: 'der', type: 'spki' }).subarray(12))).toBe(false);
    }
  });

  test('the neutral point is refused as a key, and a forged signature for it does not verify', () => {
    const neutral = rawOfY(1n);
    expect(() => parseEd25519PublicKey(neutral.toString('base64'))).toThrow(KeyFormatError);
    expect(() => parseEd25519PublicKey(spkiPem(neutral))).toThrow(/small order/);
    // R = B (the base point, y = 4/5), S = 1: [S]B = R + [k]A holds for A = neutral, whatever the message.
    const forged = Buffer.concat([rawOfY(mod(4n * inv(5n))), rawOfY(1n)]).toString('base64');
    expect(verify(null, Buffer.from('any message'), createPublicKey(spkiPem(neutral)), Buffer.from(forged, 'base64'))).toBe(true); // OpenSSL alone
    expect(verifyEd25519(spkiPem(neutral), Buffer.from('any message'), forged)).toBe(false);
  });
});

describe('parseEd25519PublicKey', () => {
  test('takes PEM SPKI and base64 raw keys; a signature made with the pair verifies', () => {
    const pair = generateEd25519();
    const raw = createPublicKey(pair.publicKeyPem).export({ format: 'der', type: 'spki' }).subarray(12);
    expect(publicKeyPem(parseEd25519PublicKey(pair.publicKeyPem))).toBe(pair.publicKeyPem);
    expect(publicKeyPem(parseEd25519PublicKey(raw.toString('base64')))).toBe(pair.publicKeyPem);
    expect(verifyEd25519(pair.publicKeyPem, Buffer.from('m'), signEd25519(pair.privateKeyPem, Buffer.from('m')))).toBe(true);
  });

  test('refuses a private key, even though one could derive the public key from it', () => {
    const pair = generateEd25519();
    expect(() => parseEd25519PublicKey(pair.privateKeyPem)).toThrow(/private key/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs1' }).toString();
    expect(() => parseEd25519PublicKey(rsa)).toThrow(/private key/);
    expect(() => parseEd25519PublicKey('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).toThrow(/BEGIN PUBLIC KEY/);
  });
});
