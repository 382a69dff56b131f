/**
 * Helpers of the passport rotation and ephemeral passport tests: Ed25519 keys and signatures from
 * node:crypto and from the openssl command line (an implementation that shares no code with svc),
 * challenges, and the SHA-256 of a key's SPKI bytes as the trust log names keys.
 */
import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestApp } from './helpers/harness';

export interface KeyPair {
  publicKeyPem: string;
  /** base64 of the raw 32-byte public key. */
  publicKeyRaw: string;
  /** Signs the UTF-8 bytes of `text`; base64 of the raw 64-byte signature. */
  sign(text: string): string;
  via: 'node' | 'openssl';
}

const rawOf = (pem: string) => createPublicKey(pem).export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');

export function nodeKey(): KeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const publicKeyPem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  return { publicKeyPem, publicKeyRaw: rawOf(publicKeyPem), sign: (text) => sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64'), via: 'node' };
}

/** A key made by `openssl genpkey -algorithm ed25519`; signatures by `openssl pkeyutl -sign -rawin`. Call `dispose` when done. */
export function opensslKey(): KeyPair & { dispose(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-openssl-'));
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', key]);
  const publicKeyPem = execFileSync('openssl', ['pkey', '-in', key, '-pubout'], { encoding: 'utf8' });
  let n = 0;
  return {
    publicKeyPem,
    publicKeyRaw: rawOf(publicKeyPem),
    via: 'openssl',
    sign(text) {
      const payload = join(dir, `payload-${++n}.txt`);
      const sig = join(dir, `sig-${n}.bin`);
      writeFileSync(payload, text, 'utf8');
      execFileSync('openssl', ['pkeyutl', '-sign', '-rawin', '-inkey', key, '-in', payload, '-out', sig]);
      return readFileSync(sig).toString('base64');
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The key a harness-registered agent holds (its PKCS#8 PEM). */
export function keyOfPem(publicKeyPem: string, privateKeyPem: string): KeyPair {
  const node = { publicKeyPem, privateKeyPem };
  return {
    publicKeyPem: node.publicKeyPem,
    publicKeyRaw: rawOf(node.publicKeyPem),
    sign: (text) => sign(null, Buffer.from(text, 'utf8'), node.privateKeyPem).toString('base64'),
    via: 'node',
  };
}

/** SHA-256 (hex) of the key's SPKI DER bytes: how the trust log names a passport key. */
export const spkiSha256 = (pem: string): string => createHash('sha256').update(createPublicKey(pem).export({ format: 'der', type: 'spki' })).digest('hex');

export async function challengeOf(t: TestApp, agentId: string): Promise<{ challenge_id: string; sign_payload: string; expires_at: string }> {
  const c = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId } });
  if (c.status !== 200) throw new Error(`challenge failed: ${c.status} ${c.raw}`);
  return c.body;
}

/** A session token from the challenge exchange, signed by `key`; the whole answer. */
export async function verifyWith(t: TestApp, agentId: string, key: KeyPair) {
  const c = await challengeOf(t, agentId);
  return t.request('POST', '/v1/auth/passport/verify', { body: { agent_id: agentId, challenge_id: c.challenge_id, signature: key.sign(c.sign_payload) } });
}

/** The trust log entry at `index`. */
export async function logEntry(t: TestApp, index: number): Promise<{ kind: string; agent_id: string; epoch: number; at: string; data: Record<string, any> }> {
  const r = await t.request('GET', `/v1/trust/log/entries?start=${index}&end=${index + 1}`);
  if (r.status !== 200) throw new Error(`log read failed: ${r.status} ${r.raw}`);
  return r.body.entries[0].entry;
}

export const logSize = async (t: TestApp): Promise<number> => (await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size as number;

export async function parity(t: TestApp) {
  const r = await t.request('GET', '/admin/trust/parity-check', { headers: { 'x-admin-key': 'test-admin-key' } });
  if (r.status !== 200) throw new Error(`parity failed: ${r.status} ${r.raw}`);
  return r.body as { ok: boolean; mismatch_count: number; mismatches: { projection: string; key: string; field: string }[] };
}
