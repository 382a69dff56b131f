import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export class KeyFormatError extends Error {}

/**
 * Encodings of the Ed25519 points of small order (order 1, 2, 4 or 8), as libsodium lists them:
 * y = 0, 1, the two y of the order-8 points, p - 1, and the non-canonical p and p + 1. The top bit
 * (x's sign) is ignored when comparing. Such a public key is no identity: with A = the neutral point,
 * R = B and S = 1 verify for every message, and OpenSSL's cofactorless verify accepts that.
 */
const SMALL_ORDER = [
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0100000000000000000000000000000000000000000000000000000000000000',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
].map((h) => Buffer.from(h, 'hex'));

/** True when the raw 32-byte encoding is a point of small order (see SMALL_ORDER). */
export function hasSmallOrder(raw: Uint8Array): boolean {
  if (raw.length !== 32) return false;
  return SMALL_ORDER.some((bad) => {
    for (let i = 0; i < 31; i++) if (raw[i] !== bad[i]) return false;
    return (raw[31] & 0x7f) === bad[31];
  });
}

const P = 2n ** 255n - 19n;
const D = 37095705934669439343138083508754565189542113879843219016388785533085940283555n; // -121665/121666 mod p
const SQRT_M1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752n; // 2^((p-1)/4) mod p
const mod = (a: bigint) => ((a % P) + P) % P;
function pow(b: bigint, e: bigint): bigint {
  let r = 1n;
  for (b = mod(b); e > 0n; e >>= 1n, b = (b * b) % P) if (e & 1n) r = (r * b) % P;
  return r;
}

/**
 * Whether 32 bytes decode to a point of the curve (RFC 8032 5.1.3): a canonical y (< p) for which
 * x² = (y² - 1) / (d·y² + 1) has a root, and not "-0". Node takes any 32 bytes as an Ed25519 key, and
 * one that is no point can never verify a signature: the agent's passport would be dead for good.
 */
export function isCurvePoint(raw: Uint8Array): boolean {
  if (raw.length !== 32) return false;
  const sign = raw[31] >> 7;
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? raw[i] & 0x7f : raw[i]);
  if (y >= P) return false;
  const y2 = (y * y) % P;
  const u = mod(y2 - 1n);
  const v = mod(D * y2 + 1n);
  const v3 = (v * v % P) * v % P;
  let x = (u * v3 % P) * pow(u * (v3 * v3 % P) * v % P, (P - 5n) / 8n) % P;
  const vx2 = v * (x * x % P) % P;
  if (vx2 !== u) {
    if (vx2 !== mod(-u)) return false;
    x = x * SQRT_M1 % P;
  }
  return !(x === 0n && sign === 1);
}

const rawOf = (key: KeyObject): Buffer => key.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);

/**
 * Accepts an Ed25519 public key as PEM (SPKI) or as base64 (standard or url-safe) of the raw 32 bytes.
 * Returns the key object; throws KeyFormatError with a message a client can act on.
 */
export function parseEd25519PublicKey(input: string): KeyObject {
  const key = readEd25519PublicKey(input);
  const raw = rawOf(key);
  if (!isCurvePoint(raw)) throw new KeyFormatError('these 32 bytes are not a point of the Ed25519 curve: no signature could ever verify against them');
  if (hasSmallOrder(raw)) throw new KeyFormatError('a point of small order is not a usable public key');
  return key;
}

function readEd25519PublicKey(input: string): KeyObject {
  const text = canonicalKeyText(input).trim();
  if (text.startsWith('-----BEGIN')) {
    // createPublicKey would also derive the public key from a private one; only a public key is taken.
    if (!text.startsWith('-----BEGIN PUBLIC KEY-----')) {
      throw new KeyFormatError(/PRIVATE KEY/.test(text.slice(0, 40))
        ? 'this is a private key: send only the public key (PEM "BEGIN PUBLIC KEY" or base64 of the raw 32 bytes), and keep the private key to yourself'
        : 'expected a PEM "BEGIN PUBLIC KEY" block');
    }
    let key: KeyObject;
    try {
      key = createPublicKey({ key: text, format: 'pem' });
    } catch {
      throw new KeyFormatError('not a valid PEM public key');
    }
    if (key.asymmetricKeyType !== 'ed25519') {
      throw new KeyFormatError(`expected an Ed25519 key, got ${key.asymmetricKeyType ?? 'an unknown type'}`);
    }
    return key;
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) throw new KeyFormatError('expected PEM SPKI or base64 of the raw 32-byte key');
  const raw = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (raw.length !== 32) throw new KeyFormatError(`raw Ed25519 public key must be 32 bytes, got ${raw.length}`);
  try {
    return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    throw new KeyFormatError('not a valid Ed25519 public key');
  }
}

export const publicKeyPem = (key: KeyObject): string => key.export({ format: 'pem', type: 'spki' }).toString();

export function generateEd25519(): { publicKeyPem: string; privateKeyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}

/**
 * Verifies a base64 raw Ed25519 signature (64 bytes) over `message`. Whitespace inside the base64 (a
 * line-wrapped copy) is ignored, as for keys (canonicalKeyText); any other character outside the
 * alphabet, or a length other than 64 bytes, fails. Never throws.
 */
export function verifyEd25519(publicKeyPemText: string, message: Buffer, signatureB64: string): boolean {
  if (typeof signatureB64 !== 'string') return false;
  const text = canonicalKeyText(signatureB64).trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return false;
  const sig = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (sig.length !== 64) return false;
  try {
    const key = createPublicKey(publicKeyPemText);
    // A small-order key (none is accepted at registration) would verify forged signatures.
    if (hasSmallOrder(rawOf(key))) return false;
    return verify(null, message, key, sig);
  } catch {
    return false;
  }
}

/** Signs with a PEM (PKCS#8) private key; used by tests and client examples. */
export function signEd25519(privateKeyPemText: string, message: Buffer): string {
  return sign(null, message, createPrivateKey(privateKeyPemText)).toString('base64');
}

/**
 * Public key (or signature) text as a lax reader takes it (RFC 7468, sections 2 and 3: parsers SHOULD
 * ignore whitespace and MUST handle different newline conventions, and no line break is required
 * after the BEGIN line): a PEM block whose base64 is indented, joined on one line, split by spaces or
 * by other newlines is re-wrapped in the strict form OpenSSL reads; base64 of a raw key or of a
 * signature loses its whitespace (a line-wrapped copy). Anything else is returned as it was, for the
 * key parser's own message.
 */
function canonicalKeyText(input: string): string {
  const text = input.trim();
  const pem = /^-----BEGIN ([A-Z0-9 ]{1,40})-----([A-Za-z0-9+/=\s]*)-----END \1-----$/.exec(text);
  if (pem) {
    const body = pem[2].replace(/\s+/g, '');
    return `-----BEGIN ${pem[1]}-----\n${(body.match(/.{1,64}/g) ?? []).join('\n')}\n-----END ${pem[1]}-----\n`;
  }
  if (/^[A-Za-z0-9+/_=\s-]+$/.test(text) && !text.startsWith('-----')) return text.replace(/\s+/g, '');
  return input;
}
