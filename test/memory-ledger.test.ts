/**
 * The memory ledger's codes: the live version as a strong ETag on GET and PUT, PUT with If-Match
 * (409 MEMORY_LEDGER_VERSION_CONFLICT when the live version differs; a refused write is neither
 * stored nor counted), the race of 20 PUTs with the same If-Match (exactly one wins), and 503
 * MEMORY_LEDGER_UNAVAILABLE when the ledger cannot be written (SQLite out of room here; PostgreSQL
 * out of reach in database-down.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testEngine } from './helpers/engines';
import { startTestApp, type RegisteredAgent, type TestApp } from './helpers/harness';

let t: TestApp;
let a: RegisteredAgent;
const put = (key: string, value: unknown, ifMatch?: string, extra: Record<string, unknown> = {}) =>
  t.request('PUT', `/v1/memory/${key}`, { token: a.apiKey, body: { value, ...extra }, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } });
const get = (key: string) => t.request('GET', `/v1/memory/${key}`, { token: a.apiKey });
const codeOf = (r: { status: number; body: any }) => [r.status, r.body?.error_code];
const writes = async () => (await t.request('GET', '/v1/memory/stats', { token: a.apiKey })).body.ops_this_month as number;

beforeAll(async () => {
  t = await startTestApp();
  a = await t.registerAgent();
});
afterAll(async () => t?.close());

describe('versions and If-Match', () => {
  test('GET and PUT answer the live version as a strong ETag', async () => {
    const first = await put('etag', 1);
    expect([first.status, first.body.version, first.headers.etag]).toEqual([200, 1, '"1"']);
    const read = await get('etag');
    expect([read.body.version, read.headers.etag]).toEqual([1, '"1"']);
    expect((await put('etag', 2)).headers.etag).toBe('"2"');
    expect((await get('etag')).headers.etag).toBe('"2"');
  });

  test('If-Match the live version writes; a stale one is 409 MEMORY_LEDGER_VERSION_CONFLICT naming the live version, nothing stored or counted', async () => {
    await put('doc', { v: 'a' });
    const seen = (await get('doc')).headers.etag as string;
    const ok = await put('doc', { v: 'b' }, seen);
    expect([ok.status, ok.body.version]).toEqual([200, 2]);
    const before = await writes();
    const stale = await put('doc', { v: 'c' }, seen);
    expect(codeOf(stale)).toEqual([409, 'MEMORY_LEDGER_VERSION_CONFLICT']);
    expect(stale.body).toMatchObject({ key: 'doc', current_version: 2, current_etag: '"2"' });
    expect(stale.body.message).toMatch(/If-Match: "2"/);
    expect((await get('doc')).body).toMatchObject({ value: { v: 'b' }, version: 2 });
    expect(await writes()).toBe(before);
  });

  test('a list of ETags matches any of them; a weak tag or a tag that is no version never matches', async () => {
    await put('list', 1);
    await put('list', 2);
    expect((await put('list', 3, '"1", "2"')).status).toBe(200);
    for (const tag of ['W/"3"', '"abc"', '"03"', '""', '"1", W/"3"']) {
      expect(codeOf(await put('list', 4, tag)), tag).toEqual([409, 'MEMORY_LEDGER_VERSION_CONFLICT']);
    }
    expect((await put('list', 4, '"3"')).body.version).toBe(4);
  });

  test('If-Match: * needs a live value; a missing, deleted or expired key conflicts with current_version null', async () => {
    expect(codeOf(await put('fresh', 1, '*'))).toEqual([409, 'MEMORY_LEDGER_VERSION_CONFLICT']);
    expect(codeOf(await put('fresh', 1, '"1"'))).toEqual([409, 'MEMORY_LEDGER_VERSION_CONFLICT']);
    expect((await put('fresh', 1)).status).toBe(200);
    expect((await put('fresh', 2, '*')).body.version).toBe(2);
    expect((await t.request('DELETE', '/v1/memory/fresh', { token: a.apiKey })).status).toBe(200);
    const gone = await put('fresh', 3, '"2"');
    expect([...codeOf(gone), gone.body.current_version]).toEqual([409, 'MEMORY_LEDGER_VERSION_CONFLICT', null]);
    await put('brief', 1, undefined, { ttl: 10 });
    t.clock.advance(11_000);
    expect(codeOf(await put('brief', 2, '"1"'))).toEqual([409, 'MEMORY_LEDGER_VERSION_CONFLICT']);
    // Without If-Match a PUT always writes, as before.
    expect((await put('brief', 2)).status).toBe(200);
  });

  test('a malformed If-Match is 422 VALIDATION_FAILED naming the header', async () => {
    await put('bad', 1);
    for (const h of ['1', 'version 1', '"1" "2"', ',', '"a"b"']) {
      const r = await put('bad', 2, h);
      expect([...codeOf(r), r.body.field], h).toEqual([422, 'VALIDATION_FAILED', 'headers.if-match']);
    }
  });

  test('20 concurrent PUTs with the same If-Match: exactly one succeeds, the others conflict, one version is added', async () => {
    await put('race', 0);
    const etag = (await get('race')).headers.etag as string;
    const before = await writes();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => put('race', i + 1, etag)));
    const won = answers.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter((r) => r.status === 409 && r.body.error_code === 'MEMORY_LEDGER_VERSION_CONFLICT')).toHaveLength(19);
    const now = await get('race');
    expect([now.body.version, now.body.value]).toEqual([2, won[0].body.value]);
    expect(await writes()).toBe(before + 1);
  });
});

describe.skipIf(testEngine() !== 'sqlite')('the ledger that cannot be written (SQLite out of room)', () => {
  test('503 MEMORY_LEDGER_UNAVAILABLE with request_id while the file cannot grow; writes work again after', async () => {
    const sqlite = t.database.sqlite as { pragma(s: string, o?: { simple: boolean }): unknown };
    const pages = Number(sqlite.pragma('page_count', { simple: true }));
    const before = Number(sqlite.pragma('max_page_count', { simple: true }));
    sqlite.pragma(`max_page_count = ${pages}`);
    try {
      const big = 'x'.repeat(400_000);
      const r = await put('full', big);
      expect(codeOf(r)).toEqual([503, 'MEMORY_LEDGER_UNAVAILABLE']);
      expect(r.body.request_id).toEqual(expect.any(String));
      expect(r.raw).not.toMatch(/SQLITE/);
    } finally {
      sqlite.pragma(`max_page_count = ${before}`);
    }
    expect(codeOf(await get('full'))).toEqual([404, 'MEMORY_KEY_NOT_FOUND']);
    expect((await put('full', 'x'.repeat(400_000))).status).toBe(200);
  });
});
