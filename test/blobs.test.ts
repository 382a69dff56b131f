/**
 * Blob routes on both engines (vitest projects) and both byte stores (local files, s3rver):
 * upload (raw and multipart), idempotency, per-agent ids, limits, downloads with Range, list,
 * meta, signed URLs, soft delete and the reconciliation sweep, and the security rules.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, startBlobApp, type BlobApp, type StoreKind } from './blobs-support';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function multipart(field: string, filename: string, type: string, data: Buffer) {
  const boundary = `----svctest${randomBytes(6).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

describe.each<StoreKind>(['fs', 's3'])('blobs on the %s store', (store) => {
  let w: BlobApp;
  let a: { token: string; id: string };
  let b: { token: string; id: string };
  beforeAll(async () => {
    w = await startBlobApp(store, { SVC_BLOB_MAX_BYTES: String(2 * 1024 * 1024), SVC_BLOB_DELETE_GRACE_SECONDS: '3600', SVC_BLOB_SWEEP_INTERVAL_SECONDS: '1', SVC_BLOB_SIGNING_SECRET: 'sig-secret' });
    a = await w.agent();
    b = await w.agent();
  });
  afterAll(async () => w?.close());

  test('raw upload: 201 with a content-addressed id, 200 for the same bytes again; another agent gets its own id', async () => {
    const bytes = randomBytes(5000);
    const first = await w.upload(a.token, bytes, 'Application/Octet-Stream');
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ blob_id: expect.stringMatching(/^b_[0-9a-f]{16}$/), size_bytes: 5000, content_type: 'application/octet-stream', sha256: sha(bytes) });
    const again = await w.upload(a.token, bytes);
    expect(again.status).toBe(200);
    expect(again.body.blob_id).toBe(first.body.blob_id);
    const other = await w.upload(b.token, bytes);
    expect(other.status).toBe(201);
    expect(other.body.blob_id).not.toBe(first.body.blob_id);
    // Each sees only its own.
    expect((await w.request('GET', `/v1/blobs/${other.body.blob_id}`, { token: a.token })).status).toBe(404);
    const got = await w.request('GET', `/v1/blobs/${first.body.blob_id}`, { token: a.token });
    expect(got.status).toBe(200);
    expect(got.rawBytes.equals(bytes)).toBe(true);
    expect(got.headers).toMatchObject({ 'content-type': 'application/octet-stream', 'content-length': '5000', 'accept-ranges': 'bytes', etag: `"${sha(bytes)}"`, 'x-content-type-options': 'nosniff' });
  });

  test('multipart field `file` keeps its type and file name; another field name is refused', async () => {
    const data = Buffer.from('name,qty\napple,3\n');
    const m = multipart('file', 'fruit.csv', 'text/csv', data);
    const r = await w.request('PUT', '/v1/blobs', { token: a.token, body: m.body, headers: { 'content-type': m.contentType } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ size_bytes: data.length, content_type: 'text/csv', sha256: sha(data) });
    const meta = await w.request('GET', `/v1/blobs/${r.body.blob_id}/meta`, { token: a.token });
    expect(meta.body).toMatchObject({ blob_id: r.body.blob_id, filename: 'fruit.csv', content_type: 'text/csv', size_bytes: data.length, sha256: sha(data), parse: null, created_at: expect.any(String), updated_at: expect.any(String) });
    const wrong = multipart('upload', 'x.csv', 'text/csv', data);
    const bad = await w.request('PUT', '/v1/blobs', { token: a.token, body: wrong.body, headers: { 'content-type': wrong.contentType } });
    expect(bad.status).toBe(422);
    expect(bad.body.error_code).toBe('BLOB_FILE_REQUIRED');
  });

  test('a file name no store can keep (NUL) is 422 on both engines, and nothing is kept', async () => {
    const listed = async () => (await w.request('GET', '/v1/blobs?per_page=100', { token: a.token })).body.total;
    const before = await listed();
    const m = multipart('file', 'a\u0000b.csv', 'text/csv', Buffer.from('x,y\n1,2\n'));
    const r = await w.request('PUT', '/v1/blobs', { token: a.token, body: m.body, headers: { 'content-type': m.contentType } });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'body.file' });
    expect(r.body.message).toMatch(/NUL/);
    expect(await listed()).toBe(before);
  });

  test('a file name of 255 characters is kept; a longer one (even one too long for the part header) is 422 and nothing is kept', async () => {
    const listed = async () => (await w.request('GET', '/v1/blobs?per_page=100', { token: a.token })).body.total;
    const name = `${'é'.repeat(251)}.csv`; // 255 characters, more bytes
    const ok = multipart('file', name, 'text/csv', Buffer.from('n,m\n255,1\n'));
    const kept = await w.request('PUT', '/v1/blobs', { token: a.token, body: ok.body, headers: { 'content-type': ok.contentType } });
    expect(kept.status).toBe(201);
    expect((await w.request('GET', `/v1/blobs/${kept.body.blob_id}/meta`, { token: a.token })).body.filename).toBe(name);
    const before = await listed();
    for (const long of [`${'a'.repeat(252)}.csv`, `${'b'.repeat(200_000)}.pdf`]) {
      const m = multipart('file', long, 'application/pdf', Buffer.from(`%PDF-1.4 ${long.length}`));
      const r = await w.request('PUT', '/v1/blobs', { token: a.token, body: m.body, headers: { 'content-type': m.contentType } });
      expect(r.status, `${long.length} characters`).toBe(422);
      expect(r.body).toMatchObject({ error_code: 'VALIDATION_FAILED', field: 'body.file' });
      expect(r.body.message).toMatch(/longer than 255 characters/);
    }
    expect(await listed()).toBe(before);
  });

  test('a multipart body that ends inside the file part is 400 BLOB_MULTIPART_INVALID over real HTTP, and nothing is kept', async () => {
    const listed = async () => (await w.request('GET', '/v1/blobs?per_page=100', { token: a.token })).body.total;
    const before = await listed();
    const url = w.built.app.server.listening ? `http://127.0.0.1:${(w.built.app.server.address() as { port: number }).port}` : await w.built.app.listen({ host: '127.0.0.1', port: 0 });
    const boundary = 'cut-short';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\nname,qty\napple,3`;
    const res = await fetch(`${url}/v1/blobs`, {
      method: 'PUT', body, headers: { authorization: `Bearer ${a.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error_code: 'BLOB_MULTIPART_INVALID', message: expect.stringMatching(/Malformed multipart body/) });
    expect(await listed()).toBe(before);
  });

  test('a JSON or text body is stored as bytes, not parsed; a missing Content-Type is application/octet-stream', async () => {
    const json = await w.upload(a.token, '{"not":"parsed"', 'application/json; charset=utf-8');
    expect(json.status).toBe(201);
    expect(json.body.content_type).toBe('application/json; charset=utf-8');
    const res = await w.built.app.inject({ method: 'PUT', url: '/v1/blobs', headers: { authorization: `Bearer ${a.token}` }, payload: Buffer.from('untyped') });
    expect(res.statusCode).toBe(201);
    expect(JSON.parse(res.body).content_type).toBe('application/octet-stream');
    const unparsable = await w.upload(a.token, 'x', 'not a type');
    expect([unparsable.status, unparsable.body.error_code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const long = await w.upload(a.token, 'x', `application/${'x'.repeat(300)}`);
    expect([long.status, long.body.error_code]).toEqual([422, 'BLOB_CONTENT_TYPE_INVALID']);
  });

  test('413 BLOB_TOO_LARGE over SVC_BLOB_MAX_BYTES, by Content-Length or while streaming; nothing is kept', async () => {
    const before = (await w.request('GET', '/v1/blobs', { token: a.token })).body.total;
    const big = randomBytes(2 * 1024 * 1024 + 1);
    const r = await w.upload(a.token, big);
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ error_code: 'BLOB_TOO_LARGE', max_bytes: 2 * 1024 * 1024 });
    // Chunked, no Content-Length: cut off while streaming.
    const { Readable } = await import('node:stream');
    const res = await w.built.app.inject({
      method: 'PUT', url: '/v1/blobs', headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/octet-stream' },
      payload: Readable.from((function* () { for (let i = 0; i < 40; i++) yield randomBytes(64 * 1024); })()),
    });
    expect(res.statusCode).toBe(413);
    expect(JSON.parse(res.body).error_code).toBe('BLOB_TOO_LARGE');
    const m = multipart('file', 'big.bin', 'application/octet-stream', big);
    const mp = await w.request('PUT', '/v1/blobs', { token: a.token, body: m.body, headers: { 'content-type': m.contentType } });
    expect(mp.status).toBe(413);
    expect(mp.body.error_code).toBe('BLOB_TOO_LARGE');
    expect((await w.request('GET', '/v1/blobs', { token: a.token })).body.total).toBe(before);
  });

  test('Range: single ranges (206), suffix and open ranges, clamping, 416 edge cases, ignored bad headers, multi-range', async () => {
    const bytes = Buffer.from('0123456789abcdefghij'); // 20 bytes
    const id = (await w.upload(a.token, bytes, 'text/plain')).body.blob_id;
    const get = (range: string) => w.request('GET', `/v1/blobs/${id}`, { token: a.token, headers: { range } });
    const cases: [string, number, string, string | undefined][] = [
      ['bytes=0-0', 206, '0', 'bytes 0-0/20'],
      ['bytes=5-9', 206, '56789', 'bytes 5-9/20'],
      ['bytes=15-', 206, 'fghij', 'bytes 15-19/20'],
      ['bytes=-3', 206, 'hij', 'bytes 17-19/20'],
      ['bytes=-50', 206, bytes.toString(), 'bytes 0-19/20'],
      ['bytes=18-99', 206, 'ij', 'bytes 18-19/20'],
      ['bytes=19-19', 206, 'j', 'bytes 19-19/20'],
      ['bytes=5-2', 200, bytes.toString(), undefined], // invalid spec: header ignored
      ['items=0-3', 200, bytes.toString(), undefined], // other unit: ignored
      ['bytes=abc', 200, bytes.toString(), undefined],
    ];
    for (const [range, status, body, contentRange] of cases) {
      const r = await get(range);
      expect(r.status, range).toBe(status);
      expect(r.raw, range).toBe(body);
      expect(r.headers['content-range'], range).toBe(contentRange);
      expect(r.headers['content-length'], range).toBe(String(Buffer.byteLength(body)));
    }
    for (const range of ['bytes=20-', 'bytes=20-30', 'bytes=-0', 'bytes=100-200,300-']) {
      const r = await get(range);
      expect(r.status, range).toBe(416);
      expect(r.headers['content-range']).toBe('bytes */20');
      expect(r.body.error_code).toBe('RANGE_NOT_SATISFIABLE');
    }
    const many = await get(`bytes=${Array.from({ length: 17 }, (_, i) => `${i}-${i}`).join(',')}`);
    expect(many.status).toBe(416);
    expect(many.body.message).toMatch(/At most 16 ranges/);
    // Two ranges: multipart/byteranges with one part each, Content-Length exact; an unsatisfiable one is dropped.
    const multi = await get('bytes=0-1, 10-12, 50-60');
    expect(multi.status).toBe(206);
    const boundary = /boundary=(\S+)/.exec(multi.headers['content-type'])![1];
    expect(multi.headers['content-type']).toMatch(/^multipart\/byteranges; boundary=/);
    expect(Number(multi.headers['content-length'])).toBe(multi.rawBytes.length);
    const parts = multi.raw.split(`--${boundary}`).slice(1, -1).map((p) => p.split('\r\n\r\n'));
    expect(parts.map((p) => p[0].trim())).toEqual(['Content-Type: text/plain\r\nContent-Range: bytes 0-1/20', 'Content-Type: text/plain\r\nContent-Range: bytes 10-12/20']);
    expect(parts.map((p) => p[1].replace(/\r\n$/, ''))).toEqual(['01', 'abc']);
    // An empty blob has no satisfiable range; a whole read is fine.
    const empty = (await w.upload(a.token, Buffer.alloc(0))).body.blob_id;
    expect((await w.request('GET', `/v1/blobs/${empty}`, { token: a.token, headers: { range: 'bytes=0-0' } })).status).toBe(416);
    const whole = await w.request('GET', `/v1/blobs/${empty}`, { token: a.token });
    expect([whole.status, whole.raw]).toEqual([200, '']);
    // Conditional GET.
    const etag = (await get('bytes=0-0')).headers.etag;
    expect((await w.request('GET', `/v1/blobs/${id}`, { token: a.token, headers: { 'if-none-match': etag } })).status).toBe(304);
  });

  test('list pages newest first with metadata; meta of unknown, foreign, malformed ids is 404 BLOB_NOT_FOUND', async () => {
    const c = await w.agent();
    for (let i = 0; i < 3; i++) {
      await w.upload(c.token, `item ${i}`, 'text/plain');
      w.clock.advanceSeconds(1);
    }
    const p1 = await w.request('GET', '/v1/blobs?per_page=2', { token: c.token });
    expect(p1.body).toMatchObject({ total: 3, page: 1, per_page: 2 });
    expect(p1.body.blobs.map((x: any) => x.size_bytes)).toEqual([6, 6]);
    expect(p1.body.blobs[0].created_at > p1.body.blobs[1].created_at).toBe(true);
    const p2 = await w.request('GET', '/v1/blobs?page=2&per_page=2', { token: c.token });
    expect(p2.body.blobs).toHaveLength(1);
    expect(Object.keys(p2.body.blobs[0]).sort()).toEqual(['blob_id', 'content_type', 'created_at', 'filename', 'parse', 'sha256', 'size_bytes', 'updated_at']);
    expect((await w.request('GET', '/v1/blobs?per_page=101', { token: c.token })).status).toBe(422);
    const foreign = p1.body.blobs[0].blob_id;
    for (const id of ['b_0000000000000000', foreign, 'b_123', 'B_0123456789ABCDEF', 'x'.repeat(40)]) {
      for (const path of [`/v1/blobs/${id}`, `/v1/blobs/${id}/meta`, `/v1/blobs/${id}/signed-url`]) {
        const r = await w.request('GET', path, { token: a.token });
        expect(r.status, path).toBe(404);
        expect(r.body.error_code).toBe('BLOB_NOT_FOUND');
      }
    }
  });

  test('signed URL: reads without a key (Range too) until it expires; tampered, expired or deleted is refused', async () => {
    const bytes = Buffer.from('signed bytes here');
    const id = (await w.upload(a.token, bytes, 'text/plain')).body.blob_id;
    const s = await w.request('GET', `/v1/blobs/${id}/signed-url?expires_in=120`, { token: a.token });
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ blob_id: id, expires_in: 120, expires_at: new Date(Math.floor(w.clock.now() / 1000) * 1000 + 120_000).toISOString() });
    const url = new URL(s.body.url);
    expect(url.pathname).toBe(`/v1/blobs/${id}/download`);
    const path = url.pathname + url.search;
    const ok = await w.request('GET', path);
    expect([ok.status, ok.raw]).toEqual([200, 'signed bytes here']);
    const part = await w.request('GET', path, { headers: { range: 'bytes=0-5' } });
    expect([part.status, part.raw]).toEqual([206, 'signed']);
    const def = await w.request('GET', `/v1/blobs/${id}/signed-url`, { token: a.token });
    expect(def.body.expires_in).toBe(3600);
    const q = url.searchParams;
    const tamper = (k: string, v: string) => { const u = new URLSearchParams(q); u.set(k, v); return `${url.pathname}?${u}`; };
    for (const bad of [tamper('signature', '0'.repeat(64)), tamper('expires', String(Number(q.get('expires')) + 1000)), tamper('agent_id', b.id),
      `/v1/blobs/${(await w.upload(a.token, 'other', 'text/plain')).body.blob_id}/download?${q}`, `${url.pathname}`]) {
      const r = await w.request('GET', bad);
      expect(r.status, bad).toBe(403);
      expect(r.body.error_code).toBe('SIGNED_URL_INVALID');
    }
    // The owner may use the same route with the key.
    expect((await w.request('GET', url.pathname, { token: a.token })).status).toBe(200);
    w.clock.advanceSeconds(121);
    const late = await w.request('GET', path);
    expect([late.status, late.body.error_code]).toEqual([403, 'SIGNED_URL_EXPIRED']);
    w.clock.advanceSeconds(-121);
    for (const e of ['0', '86401', 'abc']) {
      const r = await w.request('GET', `/v1/blobs/${id}/signed-url?expires_in=${e}`, { token: a.token });
      expect(r.status, e).toBe(422);
    }
    await w.request('DELETE', `/v1/blobs/${id}`, { token: a.token });
    expect((await w.request('GET', path)).status).toBe(404);
  });

  test('DELETE: 204 soft delete, storage refreshes at once; unknown or foreign ids 204 and change nothing; malformed 404', async () => {
    const c = await w.agent();
    const bytes = randomBytes(3000);
    const id = (await w.upload(c.token, bytes)).body.blob_id;
    const billing = async () => (await w.request('GET', '/v1/billing', { token: c.token })).body;
    expect((await billing()).blob_storage_bytes).toBe(3000);
    const other = (await w.upload(b.token, Buffer.from('bs own'))).body.blob_id;
    expect((await w.request('DELETE', `/v1/blobs/${other}`, { token: c.token })).status).toBe(204);
    expect((await w.request('GET', `/v1/blobs/${other}`, { token: b.token })).status).toBe(200);
    expect((await w.request('DELETE', '/v1/blobs/b_00000000000000ff', { token: c.token })).status).toBe(204);
    const bad = await w.request('DELETE', '/v1/blobs/not-a-blob', { token: c.token });
    expect([bad.status, bad.body.error_code]).toEqual([404, 'BLOB_NOT_FOUND']);
    const del = await w.request('DELETE', `/v1/blobs/${id}`, { token: c.token });
    expect([del.status, del.raw]).toEqual([204, '']);
    expect((await billing()).blob_storage_bytes).toBe(0);
    expect((await w.request('GET', `/v1/blobs/${id}`, { token: c.token })).body.error_code).toBe('BLOB_NOT_FOUND');
    expect((await w.request('GET', '/v1/blobs', { token: c.token })).body.total).toBe(0);
    expect((await w.request('DELETE', `/v1/blobs/${id}`, { token: c.token })).status).toBe(204);
    // Uploading the same bytes again is a new blob (201) with the same id.
    const back = await w.upload(c.token, bytes);
    expect([back.status, back.body.blob_id]).toEqual([201, id]);
  });

  test('reconciliation: bytes go after the grace period, and never while another live owner holds them', async () => {
    const c = await w.agent();
    const d = await w.agent();
    const shared = randomBytes(1000);
    const solo = randomBytes(1000);
    const idShared = (await w.upload(c.token, shared)).body.blob_id;
    await w.upload(d.token, shared);
    const idSolo = (await w.upload(c.token, solo)).body.blob_id;
    await w.request('DELETE', `/v1/blobs/${idShared}`, { token: c.token });
    await w.request('DELETE', `/v1/blobs/${idSolo}`, { token: c.token });
    const bytes = await w.bytes();
    await new Promise((r) => setTimeout(r, 1300)); // a sweep ran, inside the grace period
    expect(await bytes.exists(sha(solo))).toBe(true);
    w.clock.advanceSeconds(3601);
    await eventually(async () => !(await bytes.exists(sha(solo))), 5000, 'solo bytes removed');
    expect(await bytes.exists(sha(shared))).toBe(true); // d still holds it
    const dl = await w.request('GET', `/v1/blobs/${(await w.upload(d.token, shared)).body.blob_id}`, { token: d.token });
    expect(dl.rawBytes.equals(shared)).toBe(true);
    // The content comes back when uploaded again after removal.
    const again = await w.upload(c.token, solo);
    expect(again.status).toBe(201);
    expect((await w.request('GET', `/v1/blobs/${again.body.blob_id}`, { token: c.token })).rawBytes.equals(solo)).toBe(true);
    w.clock.advanceSeconds(-3601);
  });

  test('security: no key, a malformed header and a wrong key get 401 INVALID_API_KEY on every blob route', async () => {
    const id = (await w.upload(a.token, 'sec', 'text/plain')).body.blob_id;
    const routes: [any, string][] = [['PUT', '/v1/blobs'], ['GET', '/v1/blobs'], ['GET', `/v1/blobs/${id}`], ['GET', `/v1/blobs/${id}/meta`],
      ['GET', `/v1/blobs/${id}/signed-url`], ['DELETE', `/v1/blobs/${id}`]];
    for (const [method, path] of routes) {
      for (const headers of [{}, { authorization: 'Basic x' }, { authorization: 'Bearer svc_wrong_000000000000000000000000000000000' }] as Record<string, string>[]) {
        const r = await w.request(method, path, { headers, ...(method === 'PUT' ? { body: Buffer.from('x') } : {}) });
        expect(r.status, `${method} ${path}`).toBe(401);
        expect(r.body.error_code).toBe('INVALID_API_KEY');
      }
    }
    expect((await w.request('GET', `/v1/blobs/${id}`, { token: a.token })).status).toBe(200);
  });
});

describe('aggregate cap', () => {
  let w: BlobApp;
  beforeAll(async () => {
    w = await startBlobApp('fs');
  });
  afterAll(async () => w?.close());

  test('413 BLOB_STORAGE_LIMIT past the tier cap (free: 50 MB); duplicates and deletes are accounted right', async () => {
    const a = await w.agent();
    const first = randomBytes(30 * 1024 * 1024);
    expect((await w.upload(a.token, first)).status).toBe(201);
    const second = randomBytes(21 * 1024 * 1024);
    const refused = await w.upload(a.token, second);
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ error_code: 'BLOB_STORAGE_LIMIT', limit_bytes: 50 * 1024 * 1024, used_bytes: 30 * 1024 * 1024, upgrade_url: expect.any(String) });
    expect((await w.upload(a.token, first)).status).toBe(200); // the same bytes cost nothing more
    expect((await w.upload(a.token, randomBytes(20 * 1024 * 1024))).status).toBe(201); // exactly 50 MB
    const id = (await w.request('GET', '/v1/blobs', { token: a.token })).body.blobs.find((x: any) => x.size_bytes === 30 * 1024 * 1024).blob_id;
    await w.request('DELETE', `/v1/blobs/${id}`, { token: a.token });
    expect((await w.upload(a.token, second)).status).toBe(201);
    // A legacy tier has its own cap (starter: 2 GB).
    const s = await w.agent('starter');
    expect((await w.upload(s.token, randomBytes(1024))).status).toBe(201);
  });
});
