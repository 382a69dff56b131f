/**
 * Blob downloads over real HTTP (a listening server and fetch, not inject), on both byte stores:
 * the RFC 9110 points test/blobs.test.ts does not reach — HEAD, 304 framing, weak If-None-Match,
 * If-Range, Range numbers past 2^53, a suffix range on an empty blob, Content-Disposition with
 * filename* (RFC 6266 / 8187) — on GET /v1/blobs/{id} and on the signed URL alike.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBlobApp, type BlobApp, type StoreKind } from './blobs-support';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe.each<StoreKind>(['fs', 's3'])('blob downloads over HTTP on the %s store', (store) => {
  let w: BlobApp;
  let base: string;
  let a: { token: string; id: string };
  let b: { token: string; id: string };
  const bytes = Buffer.from('0123456789abcdefghij'); // 20 bytes
  let id: string;
  let signed: string;

  beforeAll(async () => {
    w = await startBlobApp(store, { SVC_BLOB_SIGNING_SECRET: 'audit-secret' });
    base = await w.built.app.listen({ host: '127.0.0.1', port: 0 });
    a = await w.agent();
    b = await w.agent();
    id = (await w.upload(a.token, bytes, 'text/plain; charset=utf-8')).body.blob_id;
    const s = await w.request('GET', `/v1/blobs/${id}/signed-url`, { token: a.token });
    const u = new URL(s.body.url);
    signed = `${base}${u.pathname}${u.search}`;
  });
  afterAll(async () => {
    // Every response has been read in full; fetch keeps some sockets (after conditional requests) that close() would wait out.
    w?.built.app.server.closeAllConnections();
    await w?.close();
  });

  const key = (token: string, h: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...h });
  const get = async (url: string, headers: Record<string, string> = {}, method = 'GET') => {
    const res = await fetch(url, { method, headers });
    const body = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, body };
  };

  test('HEAD answers with the GET headers and no body, on the key route and the signed URL; refusals stay refusals', async () => {
    for (const [url, headers] of [[`${base}/v1/blobs/${id}`, key(a.token)], [signed, {}]] as const) {
      const full = await get(url, headers);
      const head = await get(url, headers, 'HEAD');
      expect(head.status, url).toBe(200);
      expect(head.body.length).toBe(0);
      for (const h of ['content-type', 'content-length', 'etag', 'last-modified', 'accept-ranges', 'x-content-type-options', 'content-disposition', 'cache-control']) {
        expect(head.headers.get(h), h).toBe(full.headers.get(h));
      }
      expect(head.headers.get('content-length')).toBe('20');
      expect(head.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      // Range is not defined for HEAD: the same 200 headers.
      const ranged = await get(url, { ...headers, range: 'bytes=0-3' }, 'HEAD');
      expect([ranged.status, ranged.headers.get('content-length'), ranged.headers.get('content-range')]).toEqual([200, '20', null]);
      const cond = await get(url, { ...headers, 'if-none-match': full.headers.get('etag')! }, 'HEAD');
      expect(cond.status).toBe(304);
    }
    expect((await get(`${base}/v1/blobs/${id}`, key(b.token), 'HEAD')).status).toBe(404);
    expect((await get(`${base}/v1/blobs/${id}`, {}, 'HEAD')).status).toBe(401);
    expect((await get(`${base}/v1/blobs/${id}`, key('svc_wrong_000000000000000000000000000000000'), 'HEAD')).status).toBe(401);
    const tampered = new URL(signed);
    tampered.searchParams.set('agent_id', b.id);
    expect((await get(tampered.toString(), {}, 'HEAD')).status).toBe(403);
  });

  test('304: no body, and neither a Content-Length other than the 200 one nor a made-up Content-Type', async () => {
    for (const [url, headers] of [[`${base}/v1/blobs/${id}`, key(a.token)], [signed, {}]] as const) {
      const r = await get(url, { ...headers, 'if-none-match': `"${sha(bytes)}"` });
      expect(r.status).toBe(304);
      expect(r.body.length).toBe(0);
      expect([null, '20']).toContain(r.headers.get('content-length'));
      expect([null, 'text/plain; charset=utf-8']).toContain(r.headers.get('content-type'));
      expect(r.headers.get('etag')).toBe(`"${sha(bytes)}"`);
      expect(r.headers.get('cache-control')).toBe('private, max-age=0, must-revalidate');
    }
  });

  test('If-None-Match compares weakly: W/"etag" and lists match, another tag does not', async () => {
    const url = `${base}/v1/blobs/${id}`;
    const etag = `"${sha(bytes)}"`;
    expect((await get(url, key(a.token, { 'if-none-match': `W/${etag}` }))).status).toBe(304);
    expect((await get(url, key(a.token, { 'if-none-match': `"other", W/${etag}` }))).status).toBe(304);
    expect((await get(url, key(a.token, { 'if-none-match': '*' }))).status).toBe(304);
    const miss = await get(url, key(a.token, { 'if-none-match': `W/"other"` }));
    expect([miss.status, miss.body.toString()]).toEqual([200, bytes.toString()]);
  });

  test('If-Range: a matching strong ETag or the exact Last-Modified gives 206; anything else the whole blob (200)', async () => {
    for (const [url, headers] of [[`${base}/v1/blobs/${id}`, key(a.token)], [signed, {}]] as const) {
      const full = await get(url, headers);
      const etag = full.headers.get('etag')!;
      const lm = full.headers.get('last-modified')!;
      for (const v of [etag, lm]) {
        const r = await get(url, { ...headers, range: 'bytes=2-4', 'if-range': v });
        expect([r.status, r.body.toString(), r.headers.get('content-range')], v).toEqual([206, '234', 'bytes 2-4/20']);
      }
      for (const v of ['"stale"', `W/${etag}`, 'Mon, 01 Jan 2001 00:00:00 GMT', 'not a date']) {
        const r = await get(url, { ...headers, range: 'bytes=2-4', 'if-range': v });
        expect([r.status, r.body.toString(), r.headers.get('content-range'), r.headers.get('content-length')], v).toEqual([200, bytes.toString(), null, '20']);
      }
      // A stale validator sends the whole blob even where the Range alone would be 416.
      const r = await get(url, { ...headers, range: 'bytes=50-', 'if-range': '"stale"' });
      expect([r.status, r.body.toString()]).toEqual([200, bytes.toString()]);
      // If-Range without Range changes nothing.
      expect((await get(url, { ...headers, 'if-range': '"stale"' })).status).toBe(200);
    }
  });

  test('Range positions past 2^53 are valid syntax: an end is clamped (206), a start is past the end (416)', async () => {
    const url = `${base}/v1/blobs/${id}`;
    const huge = '99999999999999999999';
    const end = await get(url, key(a.token, { range: `bytes=15-${huge}` }));
    expect([end.status, end.body.toString(), end.headers.get('content-range'), end.headers.get('content-length')]).toEqual([206, 'fghij', 'bytes 15-19/20', '5']);
    const suffix = await get(url, key(a.token, { range: `bytes=-${huge}` }));
    expect([suffix.status, suffix.body.toString(), suffix.headers.get('content-range')]).toEqual([206, bytes.toString(), 'bytes 0-19/20']);
    const start = await get(url, key(a.token, { range: `bytes=${huge}-` }));
    expect([start.status, start.headers.get('content-range')]).toEqual([416, 'bytes */20']);
  });

  test('an empty blob: bytes=0- is 416 bytes */0, a non-zero suffix is satisfiable and answered whole (200, empty)', async () => {
    const empty = (await w.upload(a.token, Buffer.alloc(0), 'text/plain')).body.blob_id;
    const url = `${base}/v1/blobs/${empty}`;
    const open = await get(url, key(a.token, { range: 'bytes=0-' }));
    expect([open.status, open.headers.get('content-range')]).toEqual([416, 'bytes */0']);
    const suffix = await get(url, key(a.token, { range: 'bytes=-5' }));
    expect([suffix.status, suffix.body.length, suffix.headers.get('content-length'), suffix.headers.get('content-range')]).toEqual([200, 0, '0', null]);
  });

  test('multi-range over HTTP on a larger blob: every part holds the right bytes and Content-Length is exact', async () => {
    const big = randomBytes(600 * 1024);
    const bigId = (await w.upload(a.token, big, 'application/octet-stream')).body.blob_id;
    const r = await get(`${base}/v1/blobs/${bigId}`, key(a.token, { range: 'bytes=0-0, 300000-400000, -7' }));
    expect(r.status).toBe(206);
    expect(Number(r.headers.get('content-length'))).toBe(r.body.length);
    const boundary = /boundary=(\S+)/.exec(r.headers.get('content-type')!)![1]!;
    const want: [number, number][] = [[0, 0], [300000, 400000], [big.length - 7, big.length - 1]];
    let at = 0;
    for (const [s, e] of want) {
      const head = Buffer.from(`${at === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes ${s}-${e}/${big.length}\r\n\r\n`);
      expect(r.body.subarray(at, at + head.length).toString()).toBe(head.toString());
      at += head.length;
      expect(r.body.subarray(at, at + e - s + 1).equals(big.subarray(s, e + 1)), `${s}-${e}`).toBe(true);
      at += e - s + 1;
    }
    expect(r.body.subarray(at).toString()).toBe(`\r\n--${boundary}--\r\n`);
  });

  test('Content-Disposition keeps a non-ASCII name in filename* (RFC 8187) beside a safe ASCII filename; no quote or CR/LF gets through', async () => {
    const name = 'résumé "final";\u00a0x=1.pdf';
    const boundary = 'audit-boundary';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''${encodeURIComponent(name).replace(/'/g, '%27')}\r\nContent-Type: application/pdf\r\n\r\n`),
      Buffer.from('%PDF-1.4 audit'),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const up = await w.request('PUT', '/v1/blobs', { token: a.token, body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
    expect(up.status).toBe(201);
    expect((await w.request('GET', `/v1/blobs/${up.body.blob_id}/meta`, { token: a.token })).body.filename).toBe(name);
    const r = await get(`${base}/v1/blobs/${up.body.blob_id}`, key(a.token));
    expect(r.status).toBe(200);
    const cd = r.headers.get('content-disposition')!;
    const m = /^attachment; filename="([^"]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]+)$/.exec(cd);
    expect(m, cd).not.toBeNull();
    expect(m![1]).toMatch(/^[\w.\- ]+$/);
    expect(decodeURIComponent(m![2]!)).toBe(name);
    expect(r.headers.get('content-type')).toBe('application/pdf');
    // A name with CR/LF (only possible through filename*) is refused or neutralised; never a header of its own.
    const crlf = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%3D1.txt\r\nContent-Type: text/plain\r\n\r\ncrlf\r\n--${boundary}--\r\n`),
    ]);
    const up2 = await w.request('PUT', '/v1/blobs', { token: a.token, body: crlf, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
    if (up2.status === 201) {
      const r2 = await get(`${base}/v1/blobs/${up2.body.blob_id}`, key(a.token));
      expect(r2.status).toBe(200);
      expect(r2.headers.get('set-cookie')).toBeNull();
      expect(r2.headers.get('content-disposition')).not.toMatch(/[\r\n]/);
    } else {
      expect(up2.status).toBe(422);
    }
  });
});
