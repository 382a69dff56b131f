import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export class KeyFormatError extends Error {}

/**
 * Accepts an Ed25519 public key as PEM (SPKI) or as base64 (standard or url-safe) of the raw 32 bytes.
 * Returns the key object; throws KeyFormatError with a message a client can act on.
 */
export function parseEd25519PublicKey(input: string): KeyObject {
  const text = input.trim();
  if (text.startsWith('-----BEGIN')) {
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

/** Verifies a base64 raw Ed25519 signature (64 bytes) over `message`. Never throws. */
export function verifyEd25519(publicKeyPemText: string, message: Buffer, signatureB64: string): boolean {
  if (typeof signatureB64 !== 'string' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(signatureB64.trim())) return false;
  const sig = Buffer.from(signatureB64.trim().replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (sig.length !== 64) return false;
  try {
    return verify(null, message, createPublicKey(publicKeyPemText), sig);
  } catch {
    return false;
  }
}

/** Signs with a PEM (PKCS#8) private key; used by tests and client examples. */
export function signEd25519(privateKeyPemText: string, message: Buffer): string {
  return sign(null, message, createPrivateKey(privateKeyPemText)).toString('base64');
}
