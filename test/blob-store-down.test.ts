/**
 * The blob store unreachable (S3 down, bad bucket or credentials): routes that need the bytes answer
 * 503 BLOB_STORE_UNAVAILABLE (docs/blobstore.md, docs/api.md), not 500 INTERNAL_ERROR; nothing is
 * half written or charged, and everything works again once the store is back. A loopback proxy in
 * front of s3rver drops every connection while `down`.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeS3, type FakeS3 } from './fakes/s3rver';
import { s3Env, startBlobApp, type BlobApp } from './blobs-support';
import { csvText } from './fixtures/documents';

let s3: FakeS3;
let proxy: Server;
let down = false;
let w: BlobApp;
beforeAll(async () => {
  s3 = await startFakeS3();
  const upstream = new URL(s3.endpoint);
  proxy = createServer((req, res) => {
    if (down) return void req.socket.destroy();
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode!, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  w = await startBlobApp('s3', { ...(await s3Env(s3)), SVC_S3_ENDPOINT: endpoint });
}, 60_000);
afterAll(async () => {
  await w?.close();
  await new Promise((r) => proxy?.close(r));
  await s3?.close();
});

describe('S3 unreachable', () => {
  test('download, sync parse and upload answer 503 BLOB_STORE_UNAVAILABLE; nothing is kept or charged; all works again after', async () => {
    const a = await w.agent();
    const bytes = csvText([['lake', 'depth'], ['baikal', 1642]]);
    const first = await w.upload(a.token, bytes, 'text/csv');
    expect(first.status).toBe(201);
    const id = first.body.blob_id as string;
    const billing = async () => (await w.request('GET', '/v1/billing', { token: a.token })).body;
    const before = await billing();

    down = true;
    try {
      const unavailable = (r: { status: number; body: any }) => {
        expect([r.status, r.body.error_code]).toEqual([503, 'BLOB_STORE_UNAVAILABLE']);
        expect(r.body.request_id).toEqual(expect.any(String));
        expect(JSON.stringify(r.body)).not.toContain('127.0.0.1'); // the store's own message (endpoint, bucket) stays in the log
      };
      unavailable(await w.request('GET', `/v1/blobs/${id}`, { token: a.token }));
      // A sync parse that cannot read the bytes is refunded (it was 500 and still refunded).
      unavailable(await w.request('POST', `/v1/blobs/${id}/parse`, { token: a.token }));
      unavailable(await w.upload(a.token, 'bytes that cannot be stored now', 'text/plain'));
      const after = await billing();
      expect(after.parse_ops_this_month).toBe(before.parse_ops_this_month);
      expect(after.blob_storage_bytes).toBe(before.blob_storage_bytes);
      const list = await w.request('GET', '/v1/blobs', { token: a.token });
      expect(list.body.blobs.map((b: { blob_id: string }) => b.blob_id)).toEqual([id]);
    } finally {
      down = false;
    }

    const got = await w.request('GET', `/v1/blobs/${id}`, { token: a.token });
    expect([got.status, got.raw]).toEqual([200, bytes]);
    expect((await w.request('POST', `/v1/blobs/${id}/parse`, { token: a.token })).body.status).toBe('complete');
    expect((await w.upload(a.token, 'bytes that can be stored now', 'text/plain')).status).toBe(201);
  });
});
