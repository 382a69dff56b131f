/**
 * Checks of blobs and parsing against the API contract and docs/blobs.md (both engines, fs store): the
 * defects found, each pinned through the routes. No built-in queue worker here
 * (SVC_QUEUE_CONCURRENCY=0): queued parses run when pushed to POST /internal/queue/parse, so a
 * test decides what happens between acceptance and the run.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signPushMessage } from '../src/infra/queue';
import { createParseStore } from '../src/modules/parse/store';
import { csvText } from './fixtures/documents';
import { startBlobApp, type BlobApp } from './blobs-support';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const QUEUE_SECRET = 'audit-queue-secret';

let w: BlobApp;
beforeAll(async () => {
  w = await startBlobApp('fs', { SVC_QUEUE_CONCURRENCY: '0', SVC_QUEUE_SECRET: QUEUE_SECRET, SVC_QUEUE_MAX_ATTEMPTS: '1', SVC_BLOB_SIGNING_SECRET: 'audit' });
}, 60_000);
afterAll(async () => w?.close());

/** Runs a queued parse now, as an external push queue would. */
async function push(parseId: string) {
  const msg = JSON.stringify({ parse_id: parseId });
  const r = await w.request('POST', '/internal/queue/parse', {
    body: msg, headers: { 'content-type': 'application/json', 'svc-queue-signature': signPushMessage(QUEUE_SECRET, msg, w.clock.now()) },
  });
  expect(r.status).toBe(200);
  return r.body;
}

describe('signed URLs', () => {
  test('a URL lives at least expires_in seconds, also when asked for in the middle of a second', async () => {
    // Before: expires = floor(now / 1000) + expires_in, so asked at x.500 s with expires_in=1 the URL died 500 ms later.
    const a = await w.agent();
    const id = (await w.upload(a.token, 'signed, mid-second', 'text/plain')).body.blob_id;
    const start = w.clock.now();
    w.clock.advance(500);
    try {
      const s = await w.request('GET', `/v1/blobs/${id}/signed-url?expires_in=1`, { token: a.token });
      expect(s.status).toBe(200);
      expect(s.body.expires_in).toBe(1);
      const expiresAt = Date.parse(s.body.expires_at);
      expect(expiresAt).toBeGreaterThanOrEqual(w.clock.now() + 1000);
      const u = new URL(s.body.url);
      expect(Number(u.searchParams.get('expires')) * 1000).toBe(expiresAt);
      const path = u.pathname + u.search;
      w.clock.advance(999);
      const ok = await w.request('GET', path);
      expect([ok.status, ok.raw]).toEqual([200, 'signed, mid-second']);
      // ...and it ends exactly at expires_at on the injected clock.
      w.clock.set(expiresAt - 1);
      expect((await w.request('GET', path)).status).toBe(200);
      w.clock.set(expiresAt);
      const late = await w.request('GET', path);
      expect([late.status, late.body.error_code]).toEqual([403, 'SIGNED_URL_EXPIRED']);
    } finally {
      w.clock.set(start);
    }
  });
});

describe('a parse asked for before its blob was deleted and the same bytes uploaded again', () => {
  test('a queued parse run after the re-upload fails blob_deleted: no result, no chunks for the new blob', async () => {
    // docs/blobs.md: the re-uploaded bytes are "a new blob, without the parses of the deleted one", and
    // a parse whose blob was deleted before it ran fails `blob_deleted`, keeping no result or chunks.
    // Before: the job found a live blob under the id and completed, storing its chunks (searchable,
    // counted in blob_embed_storage_bytes) under a parse the agent can neither see nor poll.
    const a = await w.agent('starter');
    const bytes = csvText([['animal', 'legs'], ['okapi', 4], ['heron', 2]]);
    const id = (await w.upload(a.token, bytes, 'text/csv')).body.blob_id;
    const q = await w.request('POST', `/v1/blobs/${id}/parse?async=true`, { token: a.token });
    expect([q.status, q.body.status]).toEqual([202, 'queued']);
    expect((await w.request('DELETE', `/v1/blobs/${id}`, { token: a.token })).status).toBe(204);
    w.clock.advanceSeconds(1);
    const again = await w.upload(a.token, bytes, 'text/csv');
    expect([again.status, again.body.blob_id]).toEqual([201, id]);

    expect(await push(q.body.parse_id)).toMatchObject({ accepted: true, state: 'done' });

    const store = createParseStore(w.built.database.db);
    expect(await store.byId(q.body.parse_id)).toMatchObject({ status: 'failed', error_reason: 'blob_deleted', result: null });
    const chunks = await store.db.selectFrom('blob_chunks').select('parse_id').where('agent_id', '=', a.id).where('blob_id', '=', id).execute();
    expect(chunks).toEqual([]);
    const billing = await w.request('GET', '/v1/billing', { token: a.token });
    expect(billing.body.blob_embed_storage_bytes).toBe(0);
    // The agent's view: the new blob has no parse, the old parse id is 404.
    expect((await w.request('GET', `/v1/blobs/${id}/meta`, { token: a.token })).body.parse).toBeNull();
    const old = await w.request('GET', `/v1/blobs/${id}/parse/${q.body.parse_id}`, { token: a.token });
    expect([old.status, old.body.error_code]).toEqual([404, 'BLOB_NOT_FOUND']);
    // A parse of the new blob is its own and completes.
    const fresh = await w.request('POST', `/v1/blobs/${id}/parse`, { token: a.token });
    expect(fresh.body.status).toBe('complete');
    const mine = await store.db.selectFrom('blob_chunks').select('parse_id').where('agent_id', '=', a.id).where('blob_id', '=', id).execute();
    expect(mine.length).toBeGreaterThan(0);
    expect(new Set(mine.map((c) => c.parse_id))).toEqual(new Set([fresh.body.parse_id]));
  });

  test('a queued parse of a blob that was only deleted still fails blob_deleted, and one of a live blob completes', async () => {
    const a = await w.agent('starter');
    const gone = (await w.upload(a.token, csvText([['k'], ['gone']]), 'text/csv')).body.blob_id;
    const live = (await w.upload(a.token, csvText([['k'], ['live']]), 'text/csv')).body.blob_id;
    const qGone = await w.request('POST', `/v1/blobs/${gone}/parse?async=true`, { token: a.token });
    const qLive = await w.request('POST', `/v1/blobs/${live}/parse?async=true`, { token: a.token });
    await w.request('DELETE', `/v1/blobs/${gone}`, { token: a.token });
    await push(qGone.body.parse_id);
    await push(qLive.body.parse_id);
    const store = createParseStore(w.built.database.db);
    expect(await store.byId(qGone.body.parse_id)).toMatchObject({ status: 'failed', error_reason: 'blob_deleted' });
    const s = await w.request('GET', `/v1/blobs/${live}/parse/${qLive.body.parse_id}`, { token: a.token });
    expect([s.status, s.body.status]).toEqual([200, 'complete']);
    // The parse that never ran is not counted (it was given back when it failed); the one that ran is.
    expect((await w.request('GET', '/v1/billing', { token: a.token })).body.parse_ops_this_month).toBe(1);
  });
});

describe('an async parse that fails on our side after every attempt gives its parse op back', () => {
  const parseOps = async (token: string) => {
    const b = await w.request('GET', '/v1/billing', { token });
    expect(b.status).toBe(200);
    return b.body.parse_ops_this_month as number;
  };

  test('dead-lettered (the stored bytes gone): failed/internal and the op refunded, once; a broken file keeps its op', async () => {
    // Before: only a sync parse was refunded (in the request); an async one that dead-lettered kept its op.
    const a = await w.agent('starter');
    const bytes = csvText([['planet', 'moons'], ['mars', 2], ['neptune', 16]]);
    const blob = await w.upload(a.token, bytes, 'text/csv');
    expect(await parseOps(a.token)).toBe(0);
    const q = await w.request('POST', `/v1/blobs/${blob.body.blob_id}/parse?async=true`, { token: a.token });
    expect([q.status, q.body.status]).toEqual([202, 'queued']);
    expect(await parseOps(a.token)).toBe(1);
    // The store loses the bytes (our side, not the file's): the run fails internal; one attempt here, so it dead-letters.
    await (await w.bytes()).delete(sha(bytes));
    expect(await push(q.body.parse_id)).toMatchObject({ accepted: true, state: 'dead' });
    const s = await w.request('GET', `/v1/blobs/${blob.body.blob_id}/parse/${q.body.parse_id}`, { token: a.token });
    expect([s.status, s.body.status, s.body.failure_reason]).toEqual([200, 'failed', 'internal']);
    expect(await parseOps(a.token)).toBe(0);
    // Pushed again (a queue delivering twice): nothing runs, nothing is given back twice.
    expect(await push(q.body.parse_id)).toMatchObject({ accepted: false });
    expect(await parseOps(a.token)).toBe(0);

    // A file that cannot be parsed is the file's failure: the op stays counted.
    const broken = await w.upload(a.token, Buffer.from('%PDF-1.7\nnot really a pdf'), 'application/pdf');
    const qb = await w.request('POST', `/v1/blobs/${broken.body.blob_id}/parse?async=true`, { token: a.token });
    expect(qb.status).toBe(202);
    expect(await push(qb.body.parse_id)).toMatchObject({ accepted: true, state: 'done' });
    const sb = await w.request('GET', `/v1/blobs/${broken.body.blob_id}/parse/${qb.body.parse_id}`, { token: a.token });
    expect([sb.body.status, sb.body.failure_reason]).toEqual(['failed', 'corrupt']);
    expect(await parseOps(a.token)).toBe(1);
    // The receipt is kept for async parses only, and never shown.
    expect(sb.body).not.toHaveProperty('charge_receipt');
  });
});
