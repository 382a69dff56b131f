/**
 * The trust log over HTTP: checkpoints, entries and RFC 9162 proofs, checked by a verifier written
 * here from the RFC text (it imports nothing of svc's Merkle code), with the checkpoint signature
 * also verified by the openssl command line. A rewritten entry must fail verification.
 */
import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './helpers/harness';

import { consistent, leafOf, rootFromInclusion } from './helpers/rfc9162';

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/** A C2SP checkpoint note: body lines and the signature (after the 4-byte key ID) of the named key. */
function parseNote(note: string) {
  const [body, sigs] = note.split('\n\n');
  const [origin, size, root] = body.split('\n');
  const line = sigs.split('\n').find((l) => l.startsWith(`\u2014 ${origin} `)) as string;
  const blob = Buffer.from(line.split(' ')[2], 'base64');
  return { text: `${body}\n`, origin, size: Number(size), root: Buffer.from(root, 'base64'), keyId: blob.subarray(0, 4), signature: blob.subarray(4) };
}

let t: TestApp;
const admin = { 'x-admin-key': 'test-admin-key' };

async function rate(rater: { apiKey: string }, subject: string, refId: string, outcome = 'approved') {
  const r = await t.request('POST', '/v1/feedback/interaction', { token: rater.apiKey, body: { subject_agent_id: subject, ref_type: 'task', ref_id: refId, outcome, category: 'accuracy' } });
  expect(r.status).toBe(201);
  return r.body;
}

async function checkpoint() {
  const r = await t.request('GET', '/v1/trust/log/checkpoint');
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toMatch(/^text\/plain/);
  return parseNote(r.raw);
}

beforeAll(async () => {
  t = await startTestApp({ env: { SVC_TRUST_CHECKPOINT_INTERVAL_MS: '0', SVC_TRUST_LOG_ORIGIN: 'svc.test/trust-log' } });
  const agents = [];
  for (let i = 0; i < 4; i++) agents.push(await t.registerAgent());
  // 4 epoch entries, then 9 ratings: 13 entries, a size that is no power of two.
  for (let i = 0; i < 9; i++) await rate(agents[i % 2], agents[2 + (i % 2)].agentId, `task-${i}`, i % 3 === 0 ? 'error' : 'approved');
});
afterAll(async () => {
  await t?.close();
});

describe('trust log', () => {
  test('the checkpoint is a C2SP signed note whose signature the well-known key verifies, also with openssl', async () => {
    const cp = await checkpoint();
    expect(cp.origin).toBe('svc.test/trust-log');
    expect(cp.size).toBe(13);
    expect(cp.root).toHaveLength(32);
    const known = await t.request('GET', '/.well-known/svc-trust-log.json');
    expect(known.status).toBe(200);
    expect(known.body.origin).toBe('svc.test/trust-log');
    // The verifier key: <name>+<hex key id>+<base64(0x01 || raw public key)>, key id = SHA-256(name || 0x0A || 0x01 || key)[:4].
    const [name, hexId, ...rest] = String(known.body.verifier_key).split('+');
    const raw = Buffer.from(rest.join('+'), 'base64'); // base64 may hold '+' itself
    expect(raw[0]).toBe(1);
    const pemRaw = createPublicKey(known.body.public_key).export({ format: 'der', type: 'spki' }).subarray(-32);
    expect(raw.subarray(1).equals(pemRaw)).toBe(true);
    const id = sha(Buffer.from(name), Buffer.from([0x0a, 0x01]), raw.subarray(1)).subarray(0, 4);
    expect(id.toString('hex')).toBe(hexId);
    expect(cp.keyId.equals(id)).toBe(true);

    const dir = mkdtempSync(join(tmpdir(), 'svc-tlog-'));
    try {
      writeFileSync(join(dir, 'pub.pem'), known.body.public_key);
      writeFileSync(join(dir, 'body.txt'), cp.text);
      writeFileSync(join(dir, 'sig.bin'), cp.signature);
      const verify = (file: string) => execFileSync('openssl', ['pkeyutl', '-verify', '-rawin', '-pubin', '-inkey', join(dir, 'pub.pem'), '-sigfile', join(dir, 'sig.bin'), '-in', join(dir, file)], { encoding: 'utf8' });
      expect(verify('body.txt')).toMatch(/Signature Verified Successfully/);
      writeFileSync(join(dir, 'forged.txt'), cp.text.replace(`\n${cp.size}\n`, `\n${cp.size + 1}\n`));
      expect(() => verify('forged.txt')).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every entry is included in the checkpoint\'s tree: its JCS bytes hash to its leaf and the proof reaches the root', async () => {
    const cp = await checkpoint();
    const page = await t.request('GET', `/v1/trust/log/entries?start=0&end=${cp.size}`);
    expect(page.status).toBe(200);
    expect(page.body.entries).toHaveLength(cp.size);
    for (const e of page.body.entries) {
      const bytes = Buffer.from(e.entry_jcs, 'utf8');
      expect(leafOf(bytes).toString('base64')).toBe(e.leaf_hash);
      expect(JSON.parse(e.entry_jcs)).toEqual(e.entry);
      expect(e.entry.index).toBe(e.index);
      const proof = await t.request('GET', `/v1/trust/log/proof/inclusion?index=${e.index}&tree_size=${cp.size}`);
      expect(proof.status).toBe(200);
      const hashes = (proof.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
      expect(rootFromInclusion(e.index, cp.size, leafOf(bytes), hashes)?.equals(cp.root)).toBe(true);
    }
    const kinds = page.body.entries.map((e: { entry: { kind: string } }) => e.entry.kind);
    expect(kinds.slice(0, 4)).toEqual(Array(4).fill('epoch.opened'));
    expect(kinds.slice(4)).toEqual(Array(9).fill('reputation.interaction'));
  });

  test('a later checkpoint is consistent with an earlier one (every pair of sizes)', async () => {
    const before = await checkpoint();
    const [a, b] = [await t.registerAgent(), await t.registerAgent()];
    await rate(a, b.agentId, 'later');
    const after = await checkpoint();
    expect(after.size).toBe(before.size + 3);
    const roots = new Map<number, Buffer>([[before.size, before.root], [after.size, after.root]]);
    const proof = await t.request('GET', `/v1/trust/log/proof/consistency?first=${before.size}&second=${after.size}`);
    expect(proof.status).toBe(200);
    const hashes = (proof.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
    expect(consistent(before.size, after.size, roots.get(before.size) as Buffer, after.root, hashes)).toBe(true);
    expect(consistent(before.size, after.size, roots.get(before.size) as Buffer, before.root, hashes)).toBe(false);
    // Every smaller tree: its root (from an inclusion proof of its last leaf) is consistent with the latest.
    const page = await t.request('GET', `/v1/trust/log/entries?start=0&end=${after.size}`);
    for (let m = 1; m < after.size; m++) {
      const last = page.body.entries[m - 1];
      const inc = await t.request('GET', `/v1/trust/log/proof/inclusion?index=${m - 1}&tree_size=${m}`);
      const rootM = rootFromInclusion(m - 1, m, Buffer.from(last.leaf_hash, 'base64'), (inc.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'))) as Buffer;
      const c = await t.request('GET', `/v1/trust/log/proof/consistency?first=${m}&second=${after.size}`);
      expect(consistent(m, after.size, rootM, after.root, (c.body.hashes as string[]).map((h) => Buffer.from(h, 'base64')))).toBe(true);
    }
  });

  test('a rewritten entry no longer verifies against the signed root, and the parity check names it', async () => {
    const cp = await checkpoint();
    const target = 5;
    const row = await t.database.db.selectFrom('trust_log_entries').select('entry').where('log_index', '=', target).executeTakeFirstOrThrow();
    const forged = row.entry.replace(/"outcome":"(approved|error)"/, (_m, o: string) => `"outcome":"${o === 'approved' ? 'error' : 'approved'}"`);
    expect(forged).not.toBe(row.entry);
    await t.database.db.updateTable('trust_log_entries').set({ entry: forged }).where('log_index', '=', target).execute();
    try {
      const page = await t.request('GET', `/v1/trust/log/entries?start=${target}&end=${target + 1}`);
      const e = page.body.entries[0];
      const proof = await t.request('GET', `/v1/trust/log/proof/inclusion?index=${target}&tree_size=${cp.size}`);
      const hashes = (proof.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
      expect(rootFromInclusion(target, cp.size, leafOf(Buffer.from(e.entry_jcs, 'utf8')), hashes)?.equals(cp.root)).toBe(false);
      const parity = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
      expect(parity.body.ok).toBe(false);
      expect(parity.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'trust_log', key: String(target), field: 'leaf_hash' })]));
    } finally {
      await t.database.db.updateTable('trust_log_entries').set({ entry: row.entry }).where('log_index', '=', target).execute();
    }
    const again = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
    expect(again.body.ok).toBe(true);
  });

  test('a rewritten subtree hash changes the root the log serves, which the signed checkpoint exposes', async () => {
    const cp = await checkpoint();
    const first = await t.database.db.selectFrom('trust_log_nodes').select(['hash']).where('level', '=', 1).where('idx', '=', 0).executeTakeFirstOrThrow();
    await t.database.db.updateTable('trust_log_nodes').set({ hash: '00'.repeat(32) }).where('level', '=', 1).where('idx', '=', 0).execute();
    try {
      const parity = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
      expect(parity.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'trust_log_nodes', key: '1/0', field: 'hash' })]));
      // A proof built from the altered node does not reach the root signed before.
      const page = await t.request('GET', '/v1/trust/log/entries?start=3&end=4');
      const proof = await t.request('GET', `/v1/trust/log/proof/inclusion?index=3&tree_size=${cp.size}`);
      const hashes = (proof.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
      expect(rootFromInclusion(3, cp.size, Buffer.from(page.body.entries[0].leaf_hash, 'base64'), hashes)?.equals(cp.root)).toBe(false);
    } finally {
      await t.database.db.updateTable('trust_log_nodes').set({ hash: first.hash }).where('level', '=', 1).where('idx', '=', 0).execute();
    }
  });

  test('ranges and positions out of the log are TRUST_LOG_RANGE_INVALID (422)', async () => {
    const size = (await checkpoint()).size;
    const bad = [
      `/v1/trust/log/entries?start=${size}`,
      '/v1/trust/log/entries?start=3&end=3',
      '/v1/trust/log/entries?start=-1',
      '/v1/trust/log/entries?start=abc',
      '/v1/trust/log/entries',
      `/v1/trust/log/proof/inclusion?index=${size}&tree_size=${size}`,
      `/v1/trust/log/proof/inclusion?index=0&tree_size=${size + 1}`,
      '/v1/trust/log/proof/inclusion?index=0&tree_size=0',
      '/v1/trust/log/proof/inclusion?index=0',
      `/v1/trust/log/proof/consistency?first=${size}&second=${size + 1}`,
      '/v1/trust/log/proof/consistency?first=5&second=4',
      '/v1/trust/log/proof/consistency?first=0&second=4',
      '/v1/trust/log/proof/consistency?first=1.5&second=4',
    ];
    for (const path of bad) {
      const r = await t.request('GET', path);
      expect([r.status, r.body.error_code, path]).toEqual([422, 'TRUST_LOG_RANGE_INVALID', path]);
    }
  });

  test('entries are read at most 1000 at a time; the routes need no key', async () => {
    const size = (await checkpoint()).size;
    const r = await t.request('GET', '/v1/trust/log/entries?start=1');
    expect(r.status).toBe(200);
    expect(r.body.tree_size).toBe(size);
    expect(r.body.entries.map((e: { index: number }) => e.index)).toEqual(Array.from({ length: size - 1 }, (_, i) => i + 1));
    const withBadKey = await t.request('GET', '/v1/trust/log/checkpoint', { token: 'svc_wrong' });
    expect(withBadKey.status).toBe(200);
  });

  test('concurrent appends, from two instances where the engine allows, leave one consistent tree', async () => {
    const before = await checkpoint();
    const twoInstances = process.env.SVC_TEST_ENGINE !== 'postgres' || !!process.env.SVC_TEST_PG;
    const other = twoInstances ? await startTestApp({ db: t.db, env: { SVC_TRUST_CHECKPOINT_INTERVAL_MS: '0', SVC_TRUST_LOG_ORIGIN: 'svc.test/trust-log' } }) : t;
    try {
      const raters = [await t.registerAgent(), await t.registerAgent()];
      const subject = await t.registerAgent();
      const apps = [t, other];
      // Parity checks run while the ratings are written: each sees one snapshot, never a rating half applied.
      const checks = Promise.all([0, 1, 2].map(() => t.request('GET', '/admin/trust/parity-check', { headers: admin })));
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => apps[i % 2].request('POST', '/v1/feedback/interaction', {
        token: raters[i % 2].apiKey, body: { subject_agent_id: subject.agentId, ref_type: 'task', ref_id: `parallel-${i}`, outcome: 'approved', category: 'accuracy' },
      })));
      for (const c of await checks) expect([c.status, c.body.ok, c.body.mismatches]).toEqual([200, true, []]);
      expect(answers.map((a) => a.status)).toEqual(Array(24).fill(201));
      const indexes = answers.map((a) => a.body.log_index as number).sort((x, y) => x - y);
      expect(new Set(indexes).size).toBe(24);
      const after = await checkpoint();
      expect(after.size).toBe(before.size + 3 + 24);
      const c = await t.request('GET', `/v1/trust/log/proof/consistency?first=${before.size}&second=${after.size}`);
      expect(consistent(before.size, after.size, before.root, after.root, (c.body.hashes as string[]).map((h) => Buffer.from(h, 'base64')))).toBe(true);
      const parity = await t.request('GET', '/admin/trust/parity-check', { headers: admin });
      expect([parity.body.ok, parity.body.mismatch_count]).toEqual([true, 0]);
      const history = await t.request('GET', `/v1/agents/${subject.agentId}/reputation/history`);
      expect(history.body.reputation.event_count).toBe(24);
    } finally {
      if (other !== t) await other.app.close();
    }
  });

  test('one signing key is kept in the database', async () => {
    const keys = await t.database.db.selectFrom('trust_log_keys').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
    expect(Number(keys.n)).toBe(1);
  });

  // Last: it replaces the app with a new one on the same database. PGlite serves one connection for
  // its life, so on the postgres project this runs against a PostgreSQL server (CI); SQLite reopens its file.
  test.skipIf(process.env.SVC_TEST_ENGINE === 'postgres' && !process.env.SVC_TEST_PG)('after a restart the log keeps its key and goes on from where it was', async () => {
    const before = await checkpoint();
    const known = await t.request('GET', '/.well-known/svc-trust-log.json');
    const first = t;
    await first.app.close();
    const second = await startTestApp({ db: first.db, env: { SVC_TRUST_CHECKPOINT_INTERVAL_MS: '0', SVC_TRUST_LOG_ORIGIN: 'svc.test/trust-log' } });
    t = { ...second, close: async () => { await second.close(); await first.db.close(); } };
    const k2 = await t.request('GET', '/.well-known/svc-trust-log.json');
    expect(k2.body.verifier_key).toBe(known.body.verifier_key);
    const cp2 = await checkpoint();
    expect(cp2.size).toBe(before.size);
    expect(cp2.root.equals(before.root)).toBe(true);
    const [a, b] = [await t.registerAgent(), await t.registerAgent()];
    await rate(a, b.agentId, 'after-restart');
    const cp3 = await checkpoint();
    expect(cp3.size).toBe(before.size + 3);
    const c = await t.request('GET', `/v1/trust/log/proof/consistency?first=${before.size}&second=${cp3.size}`);
    expect(consistent(before.size, cp3.size, before.root, cp3.root, (c.body.hashes as string[]).map((h) => Buffer.from(h, 'base64')))).toBe(true);
  });
});
