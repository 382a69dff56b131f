/**
 * Helpers of the covenant, recovery and custody tests. The signed bytes are built here from the
 * documented format (docs/trust.md, "Signed requests"), not with svc's own functions, and signatures
 * are made with node:crypto or with the openssl command line (an implementation that shares no code
 * with svc).
 */
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestDatabase } from './helpers/engines';
import { startTestApp, type TestApp } from './helpers/harness';

export const DAY = 86_400_000;
export const HOUR = 3_600_000;
export const admin = { 'x-admin-key': 'test-admin-key' };

/** RFC 8785 for the values these tests sign (strings, integers, arrays, objects): keys sorted, no whitespace. */
export function jcs(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${jcs(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The five lines of a signed request, joined by "\n". */
export function signedBytes(scheme: string, agentId: string, challengeId: string, nonce: string, content: unknown): string {
  const digest = createHash('sha256').update(jcs(content), 'utf8').digest('hex');
  return [scheme, `agent_id:${agentId.toLowerCase()}`, `challenge_id:${challengeId.toLowerCase()}`, `nonce:${nonce}`, `content_sha256:${digest}`].join('\n');
}

export interface KeyPair { publicKeyPem: string; privateKeyPem: string }

export function keyPair(): KeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(), privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() };
}

export const nodeSign = (privateKeyPem: string, bytes: string): string => sign(null, Buffer.from(bytes, 'utf8'), privateKeyPem).toString('base64');

/** A keypair made by `openssl genpkey -algorithm ed25519`, and signing with `openssl pkeyutl -sign -rawin`. */
export function opensslKeyPair(): KeyPair & { sign(bytes: string): string; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-custody-openssl-'));
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', key]);
  execFileSync('openssl', ['pkey', '-in', key, '-pubout', '-out', join(dir, 'pub.pem')]);
  let n = 0;
  return {
    publicKeyPem: readFileSync(join(dir, 'pub.pem'), 'utf8'),
    privateKeyPem: readFileSync(key, 'utf8'),
    sign(bytes: string) {
      const inFile = join(dir, `msg-${++n}.txt`);
      const outFile = join(dir, `sig-${n}.bin`);
      writeFileSync(inFile, bytes);
      execFileSync('openssl', ['pkeyutl', '-sign', '-rawin', '-inkey', key, '-in', inFile, '-out', outFile]);
      return readFileSync(outFile).toString('base64');
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export async function challenge(t: TestApp, agentId: string, purpose?: 'session' | 'recovery'): Promise<{ challenge_id: string; challenge_nonce: string }> {
  const r = await t.request('POST', '/v1/auth/passport/challenge', { body: { agent_id: agentId, ...(purpose ? { purpose } : {}) } });
  if (r.status !== 200) throw new Error(`challenge: ${r.status} ${r.raw}`);
  return r.body;
}

/** A challenge and the signature over `content` under `scheme`, by `signer` (node:crypto or an openssl pair). */
export async function signed(t: TestApp, agentId: string, scheme: string, content: unknown, signer: KeyPair & { sign?: (b: string) => string }, purpose?: 'session' | 'recovery') {
  const c = await challenge(t, agentId, purpose);
  const bytes = signedBytes(scheme, agentId, c.challenge_id, c.challenge_nonce, content);
  return { challenge_id: c.challenge_id, signature: signer.sign ? signer.sign(bytes) : nodeSign(signer.privateKeyPem, bytes), bytes };
}

export const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];

/** The trust log entries of an agent, in order. */
export async function logEntries(t: TestApp, agentId: string): Promise<{ index: number; kind: string; epoch: number | null; data: any; at: string }[]> {
  const size = (await t.request('GET', '/v1/trust/log/entries?start=0&end=1')).body.tree_size as number;
  const out: any[] = [];
  for (let start = 0; start < size; start += 1000) {
    const r = await t.request('GET', `/v1/trust/log/entries?start=${start}&end=${Math.min(size, start + 1000)}`);
    for (const e of r.body.entries) if (e.entry.agent_id === agentId) out.push({ index: e.index, ...e.entry });
  }
  return out;
}

export async function parityOk(t: TestApp) {
  const r = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
  return r.body;
}

/** An app on a database another app used before; PGlite's socket server frees its one connection slot a moment after the previous app leaves: retry. */
export async function startOn(db: TestDatabase, env: Record<string, string>): Promise<TestApp> {
  for (let i = 0; ; i++) {
    try {
      return await startTestApp({ db, env });
    } catch (e) {
      if (i >= 10 || !/Connection terminated/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}
