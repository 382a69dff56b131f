import { createHash, sign, verify, type KeyObject } from 'node:crypto';
import { parseEd25519PublicKey } from '../../lib/ed25519';

/**
 * C2SP tlog-checkpoint bodies inside C2SP signed-notes, Ed25519 only (c2sp.org/tlog-checkpoint,
 * c2sp.org/signed-note). The wire format is the one of Go's golang.org/x/mod/sumdb/note, so any
 * witness or verifier of that ecosystem reads what this writes, and the reverse.
 */

const ALG_ED25519 = 0x01;
const SIG_PREFIX = '\u2014 '; // EM DASH, space
const MAX_SIGNATURES = 100; // as Go's note.Open: bounds the work an attacker-supplied note can cause

/** A key name: non-empty, no '+' (the vkey separator) and no whitespace (the signature-line separator). */
function isValidName(name: string): boolean {
  return name.length > 0 && !/[+\s]/u.test(name) && isWellFormed(name);
}

/** No lone UTF-16 surrogate: such a string has no UTF-8 form, so its signed bytes would be ambiguous. */
const isWellFormed = (s: string) => !/\p{Cs}/u.test(s);

/** Note text rules of signed-note: UTF-8, no ASCII control character but newline. */
const isValidText = (s: string) => isWellFormed(s) && !/[\x00-\x09\x0b-\x1f]/.test(s);

/** Standard base64 with padding, and canonical (re-encodes to itself): one encoding per value. */
function strictBase64(s: string): Buffer | null {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return null;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? b : null;
}

function rawPublicKey(key: KeyObject): Buffer {
  if (key.asymmetricKeyType !== 'ed25519') throw new TypeError(`expected an Ed25519 key, got ${key.asymmetricKeyType}`);
  const jwk = key.export({ format: 'jwk' });
  return Buffer.from(jwk.x as string, 'base64url');
}

/** signed-note key ID: the first 4 bytes of SHA-256(name || 0x0A || alg || public key). */
export function keyId(keyName: string, rawPublicKey: Uint8Array): Buffer {
  return createHash('sha256').update(keyName, 'utf8').update(Buffer.from([0x0a, ALG_ED25519])).update(rawPublicKey).digest().subarray(0, 4);
}

/** "<origin>\n<size>\n<base64 root>\n", no extension lines. */
export function checkpointBody(origin: string, size: number, root: Buffer): string {
  if (origin.length === 0 || origin.includes('\n') || !isValidText(origin)) throw new RangeError('origin must be a non-empty line of text');
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`size must be a non-negative safe integer, got ${size}`);
  if (!Buffer.isBuffer(root) || root.length !== 32) throw new RangeError('root must be a 32-byte hash');
  return `${origin}\n${size}\n${root.toString('base64')}\n`;
}

/** The note: body, a blank line, then "— <name> <base64(key ID || signature)>\n". The signature covers the body's UTF-8 bytes. */
export function signNote(body: string, keyName: string, privateKey: KeyObject): string {
  if (!body.endsWith('\n') || !isValidText(body)) throw new RangeError('note text must be non-empty, end with a newline and hold no control character but newline');
  if (!isValidName(keyName)) throw new RangeError('key name must be non-empty, without "+" or whitespace');
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError('expected an Ed25519 private key');
  // Node derives the public half of a private KeyObject; its JWK export carries x (public) too.
  const id = keyId(keyName, rawPublicKey(privateKey));
  const signature = sign(null, Buffer.from(body, 'utf8'), privateKey);
  return `${body}\n${SIG_PREFIX}${keyName} ${Buffer.concat([id, signature]).toString('base64')}\n`;
}

/** signed-note vkey: "<name>+<hex key ID>+<base64(0x01 || raw public key)>". */
export function verifierKey(keyName: string, publicKey: KeyObject): string {
  if (!isValidName(keyName)) throw new RangeError('key name must be non-empty, without "+" or whitespace');
  const raw = rawPublicKey(publicKey);
  return `${keyName}+${keyId(keyName, raw).toString('hex')}+${Buffer.concat([Buffer.from([ALG_ED25519]), raw]).toString('base64')}`;
}

export interface Verifier { name: string; id: Buffer; key: KeyObject }

/** Parses a vkey, checking the key ID against name and key. Throws on a malformed one: a vkey is configuration, not input. */
export function parseVerifierKey(vkey: string): Verifier {
  const m = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey);
  if (!m || !isValidName(m[1])) throw new RangeError('malformed verifier key: expected "<name>+<8 hex digits>+<base64>"');
  const keyBytes = strictBase64(m[3]);
  if (!keyBytes || keyBytes.length !== 33 || keyBytes[0] !== ALG_ED25519) throw new RangeError('malformed verifier key: expected an Ed25519 key (0x01 and 32 bytes)');
  const raw = keyBytes.subarray(1);
  const id = keyId(m[1], raw);
  if (id.toString('hex') !== m[2]) throw new RangeError('malformed verifier key: key ID does not match name and key');
  // The lib's parser also refuses encodings that are no curve point or of small order (forgeable).
  return { name: m[1], id, key: parseEd25519PublicKey(raw.toString('base64')) };
}

/**
 * Verifies a signed note against one key and returns its text (with the final newline), or null.
 * As Go's note.Open: signatures by other keys are ignored, and a bad signature by this key fails the
 * note even when another line by the same key verifies. Throws only on a malformed vkey.
 */
export function verifyNote(note: string, vkey: string): string | null {
  const verifier = parseVerifierKey(vkey);
  if (typeof note !== 'string' || !isValidText(note)) return null;
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return null;
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2);
  if (!lines.endsWith('\n')) return null;
  const sigLines = lines.slice(0, -1).split('\n');
  if (sigLines.length > MAX_SIGNATURES) return null;
  const message = Buffer.from(text, 'utf8');
  let verified = false;
  for (const line of sigLines) {
    if (!line.startsWith(SIG_PREFIX)) return null;
    const [name, b64, ...rest] = line.slice(SIG_PREFIX.length).split(' ');
    if (rest.length || !name || !isValidName(name) || b64 === undefined) return null;
    const sig = strictBase64(b64);
    if (!sig || sig.length < 5) return null;
    if (name !== verifier.name || !sig.subarray(0, 4).equals(verifier.id)) continue; // someone else's signature
    if (sig.length !== 4 + 64 || !verify(null, message, verifier.key, sig.subarray(4))) return null;
    verified = true;
  }
  return verified ? text : null;
}

/**
 * Verifies the note with the vkey and parses it as a C2SP checkpoint; null when the signature or the
 * body is wrong. Extension lines after the root hash are allowed by the spec and ignored here.
 */
export function openNote(note: string, vkey: string): { origin: string; size: number; root: Buffer } | null {
  const text = verifyNote(note, vkey);
  if (text === null) return null;
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3 || lines.some((l) => l.length === 0)) return null;
  const [origin, sizeText, rootText] = lines;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText)) return null;
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) return null;
  const root = strictBase64(rootText);
  if (!root || root.length !== 32) return null;
  return { origin, size, root };
}
