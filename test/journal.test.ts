/**
 * Journal commitments over HTTP: the documented client-side hash (worked example), commit with and
 * without an attestation, the log entry and its inclusion proof checked by hand, the lists (root,
 * scoped key, public; keyset pages), every error code, security and parity.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

const ADMIN = { 'x-admin-key': 'test-admin-key' };
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
let t: TestApp;

/** The client's side, as docs/trust.md writes it: SHA-256 over label LF agent id LF material. */
const commitmentOf = (agentId: string, material: string | Buffer) =>
  createHash('sha256').update(Buffer.concat([Buffer.from(`svc:sealed-journal:v1\n${agentId}\n`, 'utf8'), Buffer.from(material)])).digest('base64');
const commit = (token: string, body: unknown) => t.request('POST', '/v1/me/journal/commit', { token, body });
const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];
const sha = (b: Buffer) => createHash('sha256').update(b).digest();

/** RFC 9162 inclusion proof check, written here apart from svc's tree code. */
function rootFromProof(index: number, size: number, leaf: Buffer, path: Buffer[]): Buffer {
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) throw new Error('proof too long');
    if (fn % 2 === 1 || fn === sn) {
      r = sha(Buffer.concat([Buffer.from([1]), p, r]));
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) { fn >>= 1; sn >>= 1; }
    } else {
      r = sha(Buffer.concat([Buffer.from([1]), r, p]));
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn !== 0) throw new Error('proof too short');
  return r;
}

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('journal commitments', () => {
  test('the worked example of docs/trust.md', () => {
    expect(commitmentOf('3f2504e0-4f89-41d3-9a0c-0305e82c3301', '2026-03-01 decided to retry the parser with OCR off'))
      .toBe('yH18aNqYW3X+kB9+3D2HE9r4nhsbpaIXsZ8luw6HG5k=');
  });

  test('201: the digest stored with its log index; the entry\'s leaf hash and an inclusion proof tie it to a signed checkpoint', async () => {
    const a = await t.registerAgent();
    const hash = commitmentOf(a.agentId, 'day 1: learned the deploy key rotates weekly');
    const r = await commit(a.apiKey, { commitment_hash: hash, commit_attestation: { source: 'mcp_v163', client: 'my-agent/2.1' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      status: 'success', agent_id: a.agentId, commitment_hash: hash, commit_attestation: { source: 'mcp_v163', client: 'my-agent/2.1' }, epoch: 1,
      committed_at: new Date(t.clock.now()).toISOString(),
    });
    const i = r.body.log_index as number;
    const e = (await t.request('GET', `/v1/trust/log/entries?start=${i}&end=${i + 1}`)).body.entries[0];
    expect(e.entry).toMatchObject({ kind: 'journal.committed', agent_id: a.agentId, data: { commitment_id: r.body.commitment_id, commitment_hash: hash } });
    const leaf = sha(Buffer.concat([Buffer.from([0]), Buffer.from(e.entry_jcs, 'utf8')]));
    expect(leaf.toString('base64')).toBe(r.body.leaf_hash);
    const checkpoint = (await t.request('GET', '/v1/trust/log/checkpoint')).raw.split('\n');
    const size = Number(checkpoint[1]);
    const proof = (await t.request('GET', `/v1/trust/log/proof/inclusion?index=${i}&tree_size=${size}`)).body;
    expect(rootFromProof(i, size, leaf, proof.hashes.map((h: string) => Buffer.from(h, 'base64'))).toString('base64')).toBe(checkpoint[2]);
  });

  test('url-safe or unpadded base64 is taken and stored in the standard form; no attestation is null', async () => {
    const a = await t.registerAgent();
    const std = commitmentOf(a.agentId, Buffer.from([0xfb, 0xff, 0xfe]));
    const urlSafe = std.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    const r = await commit(a.apiKey, { commitment_hash: urlSafe });
    expect([r.status, r.body.commitment_hash, r.body.commit_attestation]).toEqual([201, std, null]);
    // The same digest in the other spelling is the same commitment.
    expect(codeOf(await commit(a.apiKey, { commitment_hash: std }))).toEqual([409, 'JOURNAL_COMMITMENT_DUPLICATE']);
  });

  test('lists: newest first in keyset pages, for the agent (root or scoped svc:memory key) and publicly', async () => {
    const a = await t.registerAgent();
    const hashes: string[] = [];
    for (let i = 0; i < 5; i++) {
      hashes.push(commitmentOf(a.agentId, `entry ${i}`));
      expect((await commit(a.apiKey, { commitment_hash: hashes[i] })).status).toBe(201);
    }
    const first = await t.request('GET', '/v1/me/journal/commitments?limit=2', { token: a.apiKey });
    expect(first.body.commitments.map((c: any) => c.commitment_hash)).toEqual([hashes[4], hashes[3]]);
    expect(first.body.total).toBe(5);
    const second = await t.request('GET', `/v1/agents/${a.agentId}/journal/commitments?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.commitments.map((c: any) => c.commitment_hash)).toEqual([hashes[2], hashes[1]]);
    const last = await t.request('GET', `/v1/agents/${a.agentId}/journal/commitments?limit=2&cursor=${second.body.next_cursor}`);
    expect([last.body.commitments.length, last.body.next_cursor]).toEqual([1, null]);
    const scoped = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:memory'] } })).body.api_key;
    expect((await t.request('GET', '/v1/me/journal/commitments', { token: scoped })).body.total).toBe(5);
    expect((await commit(scoped, { commitment_hash: commitmentOf(a.agentId, 'from the scoped key') })).status).toBe(201);
    const empty = await t.registerAgent();
    expect((await t.request('GET', `/v1/agents/${empty.agentId}/journal/commitments`)).body).toMatchObject({ commitments: [], total: 0, next_cursor: null });
  });
});

describe('journal commitments: refusals', () => {
  let a: RegisteredAgent;
  beforeAll(async () => {
    a = await t.registerAgent();
  });

  test('422 JOURNAL_HASH_INVALID: missing, null, not a string, not base64, 31 or 33 bytes, hex, non-zero padding bits', async () => {
    const good = commitmentOf(a.agentId, 'x');
    const cases: [string, unknown][] = [
      ['missing', undefined], ['null', null], ['a number', 7], ['a list', [good]], ['not base64', '!'.repeat(44)],
      ['31 bytes', Buffer.alloc(31, 7).toString('base64')], ['33 bytes', Buffer.alloc(33, 7).toString('base64')],
      ['hex of 32 bytes', Buffer.alloc(32, 7).toString('hex')], ['empty', ''],
      // The last character carries 4 bits of the digest and 2 zero bits: one of those set.
      ['padding bits set', `${good.slice(0, 42)}${B64[B64.indexOf(good[42]) | 1]}=`],
    ];
    for (const [what, commitment_hash] of cases) {
      const r = await commit(a.apiKey, commitment_hash === undefined ? {} : { commitment_hash });
      expect(codeOf(r), what).toEqual([422, 'JOURNAL_HASH_INVALID']);
    }
  });

  test('422 JOURNAL_ATTESTATION_INVALID: not an object, unknown source, other fields, a bad client', async () => {
    const commitment_hash = commitmentOf(a.agentId, 'att');
    const cases: [string, unknown][] = [
      ['a string', 'mcp_v163'], ['a list', [{ source: 'mcp_v163' }]], ['no source', { client: 'x' }], ['unknown source', { source: 'mcp_v162' }],
      ['client as the source', { source: 'client' }], ['another field', { source: 'api_v163', signed: true }],
      ['client not a string', { source: 'api_v163', client: 5 }], ['client too long', { source: 'api_v163', client: 'c'.repeat(129) }],
      ['client with a control character', { source: 'api_v163', client: 'a\nb' }],
    ];
    for (const [what, commit_attestation] of cases) {
      expect(codeOf(await commit(a.apiKey, { commitment_hash, commit_attestation })), what).toEqual([422, 'JOURNAL_ATTESTATION_INVALID']);
    }
    for (const source of ['mcp_v163', 'langgraph_v163', 'api_v163']) {
      expect((await commit(a.apiKey, { commitment_hash: commitmentOf(a.agentId, source), commit_attestation: { source } })).status).toBe(201);
    }
  });

  test('422 JOURNAL_PREIMAGE_FORBIDDEN: a body carrying material (any other field, or material inside the attestation); nothing stored', async () => {
    const commitment_hash = commitmentOf(a.agentId, 'secret plans');
    const cases: Record<string, unknown>[] = [
      { commitment_hash, material: 'secret plans' }, { commitment_hash, preimage: 'secret plans' }, { commitment_hash, journal: ['secret plans'] },
      { commitment_hash, note: 'anything else' }, { material: 'secret plans' },
      { commitment_hash, commit_attestation: { source: 'api_v163', material: 'secret plans' } },
    ];
    for (const body of cases) {
      const r = await commit(a.apiKey, body);
      expect(codeOf(r), JSON.stringify(body)).toEqual([422, 'JOURNAL_PREIMAGE_FORBIDDEN']);
      expect(JSON.stringify(r.body)).not.toContain('secret plans');
    }
    expect((await t.request('GET', '/v1/me/journal/commitments', { token: a.apiKey })).body.commitments.map((c: any) => c.commitment_hash)).not.toContain(commitment_hash);
  });

  test('409 JOURNAL_COMMITMENT_DUPLICATE answers the first; the same digest from 8 requests at once makes one', async () => {
    const hash = commitmentOf(a.agentId, 'once');
    const first = await commit(a.apiKey, { commitment_hash: hash });
    const again = await commit(a.apiKey, { commitment_hash: hash, commit_attestation: { source: 'api_v163' } });
    expect(codeOf(again)).toEqual([409, 'JOURNAL_COMMITMENT_DUPLICATE']);
    expect(again.body.commitment).toMatchObject({ commitment_id: first.body.commitment_id, log_index: first.body.log_index });
    // Another agent may commit the same digest (its own journal).
    const b = await t.registerAgent();
    expect((await commit(b.apiKey, { commitment_hash: hash })).status).toBe(201);
    const racing = commitmentOf(a.agentId, 'race');
    const answers = await Promise.all(Array.from({ length: 8 }, () => commit(a.apiKey, { commitment_hash: racing })));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 409 && r.body.error_code === 'JOURNAL_COMMITMENT_DUPLICATE')).toHaveLength(7);
  });

  test('422 INVALID_CURSOR; 404 AGENT_NOT_FOUND for an unknown or malformed agent; 401 without a key; 403 for a scoped key without svc:memory', async () => {
    expect(codeOf(await t.request('GET', '/v1/me/journal/commitments?cursor=abc', { token: a.apiKey }))).toEqual([422, 'INVALID_CURSOR']);
    expect(codeOf(await t.request('GET', `/v1/agents/${a.agentId}/journal/commitments?cursor=-1`))).toEqual([422, 'INVALID_CURSOR']);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
      expect(codeOf(await t.request('GET', `/v1/agents/${id}/journal/commitments`))).toEqual([404, 'AGENT_NOT_FOUND']);
    }
    const body = { commitment_hash: commitmentOf(a.agentId, 'sec') };
    for (const headers of [{}, { authorization: 'Bearer svc_nope' }] as Record<string, string>[]) {
      expect(codeOf(await t.request('POST', '/v1/me/journal/commit', { headers, body }))).toEqual([401, 'INVALID_API_KEY']);
      expect(codeOf(await t.request('GET', '/v1/me/journal/commitments', { headers }))).toEqual([401, 'INVALID_API_KEY']);
    }
    const search = (await t.request('POST', '/v1/me/keys', { token: a.apiKey, body: { scopes: ['svc:search'] } })).body.api_key;
    expect(codeOf(await commit(search, body))).toEqual([403, 'SCOPE_NOT_GRANTED']);
    expect(codeOf(await t.request('GET', '/v1/me/journal/commitments', { token: search }))).toEqual([403, 'SCOPE_NOT_GRANTED']);
  });

  test('parity: commitments replay to their rows; a digest changed behind svc\'s back is reported', async () => {
    const r = await commit(a.apiKey, { commitment_hash: commitmentOf(a.agentId, 'parity') });
    expect((await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN })).body.ok).toBe(true);
    const forged = Buffer.alloc(32, 9).toString('base64');
    await t.database.db.updateTable('journal_commitments').set({ commitment_hash: forged }).where('commitment_id', '=', r.body.commitment_id).execute();
    const bad = await t.request('GET', '/admin/trust/parity-check', { headers: ADMIN });
    expect(bad.body.mismatches).toEqual(expect.arrayContaining([expect.objectContaining({ projection: 'journal_commitments', key: r.body.commitment_id, field: 'commitment_hash', stored: forged })]));
    await t.database.db.updateTable('journal_commitments').set({ commitment_hash: r.body.commitment_hash }).where('commitment_id', '=', r.body.commitment_id).execute();
  });
});
