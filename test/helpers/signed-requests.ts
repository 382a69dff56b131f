/**
 * Signed requests in tests: a challenge from the API, the scheme's bytes built here from the
 * documented layout (not with svc's src/lib/signing.ts), and a signature by node:crypto or by the
 * openssl command line (an implementation that shares no code with svc).
 */
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestApp } from './harness';

/** RFC 8785 for the JSON tests send (objects, arrays, strings, integers, decimal fractions): keys sorted by UTF-16 code units. */
export function jcs(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${jcs(o[k])}`).join(',')}}`;
}

/** The signed bytes of docs/trust.md, "Signed requests". */
export function schemeBytes(scheme: string, agentId: string, challengeId: string, nonce: string, content: unknown): string {
  const digest = createHash('sha256').update(jcs(content), 'utf8').digest('hex');
  return [scheme, `agent_id:${agentId.toLowerCase()}`, `challenge_id:${challengeId.toLowerCase()}`, `nonce:${nonce}`, `content_sha256:${digest}`].join('\n');
}

export async function challengeFor(t: TestApp, agentId: string): Promise<{ challenge_id: string; challenge_nonce: string }> {
  const r = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId } });
  if (r.status !== 200) throw new Error(`challenge: ${r.status} ${r.raw}`);
  return r.body;
}

export const signWithNode = (privateKeyPem: string, bytes: string): string => sign(null, Buffer.from(bytes, 'utf8'), createPrivateKey(privateKeyPem)).toString('base64');

/** Signs with `openssl pkeyutl -sign -rawin` (the private key written to a temporary file, removed after). */
export function signWithOpenssl(privateKeyPem: string, bytes: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-openssl-sign-'));
  try {
    writeFileSync(join(dir, 'key.pem'), privateKeyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'payload.bin'), bytes);
    execFileSync('openssl', ['pkeyutl', '-sign', '-rawin', '-inkey', join(dir, 'key.pem'), '-in', join(dir, 'payload.bin'), '-out', join(dir, 'sig.bin')]);
    return readFileSync(join(dir, 'sig.bin')).toString('base64');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A keypair made by `openssl genpkey -algorithm ed25519`: PEM private (PKCS#8) and public (SPKI). */
export function opensslKeypair(): { privateKeyPem: string; publicKeyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-openssl-key-'));
  try {
    execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', join(dir, 'key.pem')]);
    execFileSync('openssl', ['pkey', '-in', join(dir, 'key.pem'), '-pubout', '-out', join(dir, 'pub.pem')]);
    return { privateKeyPem: readFileSync(join(dir, 'key.pem'), 'utf8'), publicKeyPem: readFileSync(join(dir, 'pub.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A body signed for `scheme` over `content` (the fields the scheme binds), with a fresh challenge;
 * `signer` picks node:crypto (default) or openssl.
 */
export async function signedBody(
  t: TestApp, agent: { agentId: string; privateKeyPem: string }, scheme: string, content: Record<string, unknown>,
  signer: 'node' | 'openssl' = 'node',
): Promise<Record<string, unknown>> {
  const c = await challengeFor(t, agent.agentId);
  const bytes = schemeBytes(scheme, agent.agentId, c.challenge_id, c.challenge_nonce, content);
  const passport_signature = signer === 'node' ? signWithNode(agent.privateKeyPem, bytes) : signWithOpenssl(agent.privateKeyPem, bytes);
  return { ...content, challenge_id: c.challenge_id, passport_signature };
}
