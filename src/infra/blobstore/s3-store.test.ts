import { CreateBucketCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeS3, type FakeS3 } from '../../../test/fakes/s3rver';
import { blobStoreContract } from './contract';
import { createS3Client, S3BlobStore, type S3BlobStoreOptions } from './s3-store';
import { BlobStoreUnavailableError } from './types';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function clientFor(s3: FakeS3): S3Client {
  return createS3Client({
    endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true,
  });
}

async function keysUnder(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const out = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

async function openStore(s3: FakeS3, extra: Partial<S3BlobStoreOptions> = {}) {
  const stagingDir = await mkdtemp(join(tmpdir(), 'svc-s3staging-'));
  const client = clientFor(s3);
  const store = await S3BlobStore.open({ client, bucket: s3.bucket, prefix: 'blobs', stagingDir, ...extra });
  return { store, stagingDir, client };
}

let s3: FakeS3;
beforeAll(async () => {
  s3 = await startFakeS3();
});
afterAll(async () => {
  await s3?.close();
});

blobStoreContract('s3 (s3rver)', async () => {
  // Small parts so the contract's larger uploads go through multipart.
  const { store, stagingDir, client } = await openStore(s3, { partSizeBytes: 8 * MiB });
  return {
    store,
    stagingFiles: () => readdir(stagingDir),
    storedCount: async () => (await keysUnder(client, s3.bucket, 'blobs/')).length,
    teardown: async () => {
      await store.close();
      await rm(stagingDir, { recursive: true, force: true });
    },
  };
});

describe('S3BlobStore specifics', () => {
  test('objects live at <prefix>/<sha256>; multipart above the threshold reassembles exactly', async () => {
    const { store, stagingDir, client } = await openStore(s3, { prefix: 'tenant-a', partSizeBytes: 5 * MiB });
    const small = randomBytes(1000);
    const large = randomBytes(11 * MiB + 17); // 3 parts: 5 MiB, 5 MiB, 1 MiB + 17
    for (const b of [small, large]) await (await store.stage(Readable.from([b]), 20 * MiB)).commit();
    expect((await keysUnder(client, s3.bucket, 'tenant-a/')).sort()).toEqual([`tenant-a/${sha(small)}`, `tenant-a/${sha(large)}`].sort());
    const back = Buffer.concat(await (await store.read(sha(large))).toArray());
    expect(back.equals(large)).toBe(true);
    const tail = Buffer.concat(await (await store.read(sha(large), { start: large.length - 20, end: large.length - 1 })).toArray());
    expect(tail.equals(large.subarray(large.length - 20))).toBe(true);
    await store.close();
    await rm(stagingDir, { recursive: true, force: true });
  });

  test('a failed commit surfaces BLOB_STORE_UNAVAILABLE, keeps the staged bytes for a retry, and discard cleans up', async () => {
    const { store, stagingDir, client } = await openStore(s3, { bucket: 'not-created-yet' } as Partial<S3BlobStoreOptions>);
    const bytes = randomBytes(3000);
    const staged = await store.stage(Readable.from([bytes]), 10_000);
    const err = await staged.commit().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobStoreUnavailableError);
    expect((err as BlobStoreUnavailableError).code).toBe('BLOB_STORE_UNAVAILABLE');
    expect(await readdir(stagingDir)).toHaveLength(1);
    // Once the bucket exists the same staged blob commits.
    await client.send(new CreateBucketCommand({ Bucket: 'not-created-yet' }));
    await staged.commit();
    expect(await store.size(sha(bytes))).toBe(3000);
    expect(await readdir(stagingDir)).toEqual([]);

    const other = await store.stage(Readable.from([randomBytes(10)]), 100);
    await other.discard();
    expect(await readdir(stagingDir)).toEqual([]);
    await store.close();
    await rm(stagingDir, { recursive: true, force: true });
  });

  test('uploads retry a 503 with a fresh body (single and multipart)', async () => {
    // A loopback proxy in front of s3rver that answers the first PUTs with 503 SlowDown.
    let failPuts = 2;
    let puts = 0;
    const upstream = new URL(s3.endpoint);
    const proxy = createServer((req, res) => {
      if (req.method === 'PUT') puts++;
      if (req.method === 'PUT' && failPuts > 0) {
        failPuts--;
        req.resume();
        req.on('end', () => {
          res.writeHead(503, { 'content-type': 'application/xml' });
          res.end('<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>try again</Message></Error>');
        });
        return;
      }
      const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode!, up.headers);
        up.pipe(res);
      });
      req.pipe(out);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const viaProxy = { ...s3, endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` };
    const { store, stagingDir } = await openStore(viaProxy, { partSizeBytes: 5 * MiB });
    try {
      const small = randomBytes(4000);
      await (await store.stage(Readable.from([small]), 20 * MiB)).commit();
      expect(Buffer.concat(await (await store.read(sha(small))).toArray()).equals(small)).toBe(true);
      failPuts = 1;
      const large = randomBytes(6 * MiB); // 2 parts; one of them fails once
      await (await store.stage(Readable.from([large]), 20 * MiB)).commit();
      expect(Buffer.concat(await (await store.read(sha(large))).toArray()).equals(large)).toBe(true);
      expect(puts).toBe(3 + 3); // single: 2 failures + 1; multipart: 1 failure + 2 parts
    } finally {
      await store.close();
      await new Promise((r) => proxy.close(r));
      await rm(stagingDir, { recursive: true, force: true });
    }
  });
});
