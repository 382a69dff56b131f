import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../config';
import { startFakeS3, type FakeS3 } from '../../../test/fakes/s3rver';
import { BlobStoreUnavailableError, createBlobStore, FsBlobStore } from './index';
import { S3BlobStore } from './s3-store';

let dataDir: string;
let s3: FakeS3;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-blobcfg-'));
  s3 = await startFakeS3('factory-bucket');
});
afterAll(async () => {
  await s3?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('blob settings', () => {
  test('defaults', () => {
    const b = loadConfig({}).blobs;
    expect(b).toMatchObject({
      store: 'fs', s3Region: 'us-east-1', s3ForcePathStyle: false, s3Prefix: 'blobs/', maxBytes: 1024 ** 3,
      deleteGraceSeconds: 86_400, signedUrlDefaultSeconds: 3600, signedUrlMaxSeconds: 86_400,
      parseSyncMaxBytes: 10 * 1024 ** 2, parseAsyncEnabled: true, callbackReplayEnabled: false,
    });
    expect(b.s3Bucket).toBeUndefined();
    expect(b.signingSecret).toBeUndefined();
    expect(b.queueSecret).toBeUndefined();
  });

  test('bad values are reported by name', () => {
    expect(() => loadConfig({ SVC_BLOB_STORE: 'gcs', SVC_BLOB_MAX_BYTES: '0', SVC_S3_FORCE_PATH_STYLE: 'maybe' })).toThrow(ConfigError);
    try {
      loadConfig({ SVC_BLOB_STORE: 'gcs', SVC_BLOB_MAX_BYTES: '0', SVC_S3_FORCE_PATH_STYLE: 'maybe' });
    } catch (e) {
      const text = (e as ConfigError).problems.join('\n');
      for (const name of ['SVC_BLOB_STORE', 'SVC_BLOB_MAX_BYTES', 'SVC_S3_FORCE_PATH_STYLE']) expect(text).toContain(name);
    }
  });
});

describe('createBlobStore', () => {
  test('fs (default) keeps blobs under <SVC_DATA_DIR>/blobs', async () => {
    const store = await createBlobStore(loadConfig({ SVC_DATA_DIR: dataDir }));
    expect(store).toBeInstanceOf(FsBlobStore);
    const staged = await store.stage(Readable.from([Buffer.from('abc')]), 10);
    await staged.commit();
    const key = createHash('sha256').update('abc').digest('hex');
    expect((await stat(join(dataDir, 'blobs', key.slice(0, 2), key.slice(2, 4), key))).size).toBe(3);
    await store.close();
  });

  test('s3 talks to the configured endpoint and bucket with path-style addressing', async () => {
    const store = await createBlobStore(loadConfig({
      SVC_DATA_DIR: dataDir, SVC_BLOB_STORE: 's3', SVC_S3_ENDPOINT: s3.endpoint, SVC_S3_BUCKET: s3.bucket,
      SVC_S3_ACCESS_KEY_ID: s3.accessKeyId, SVC_S3_SECRET_ACCESS_KEY: s3.secretAccessKey, SVC_S3_FORCE_PATH_STYLE: 'true',
    }));
    expect(store).toBeInstanceOf(S3BlobStore);
    const staged = await store.stage(Readable.from([Buffer.from('hello s3')]), 100);
    await staged.commit();
    expect(await store.size(staged.sha256)).toBe(8);
    expect((await stat(join(s3.directory, s3.bucket, 'blobs'))).isDirectory()).toBe(true);
    await store.close();
  });

  // s3rver checks the access key id but does not verify SigV4 signatures, so the key id is what is wrong here.
  test('s3 with an unknown access key fails with BLOB_STORE_UNAVAILABLE, not a silent success', async () => {
    const store = await createBlobStore(loadConfig({
      SVC_DATA_DIR: dataDir, SVC_BLOB_STORE: 's3', SVC_S3_ENDPOINT: s3.endpoint, SVC_S3_BUCKET: s3.bucket,
      SVC_S3_ACCESS_KEY_ID: 'NOT-A-KEY', SVC_S3_SECRET_ACCESS_KEY: s3.secretAccessKey, SVC_S3_FORCE_PATH_STYLE: 'true',
    }));
    const staged = await store.stage(Readable.from([Buffer.from('nope')]), 100);
    const err = await staged.commit().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobStoreUnavailableError);
    expect((err as Error).message).toMatch(/InvalidAccessKeyId|403/);
    await expect(store.exists(staged.sha256)).rejects.toBeInstanceOf(BlobStoreUnavailableError);
    await staged.discard();
    await store.close();
  });

  test.each([
    [{ SVC_BLOB_STORE: 's3' }, /SVC_S3_BUCKET is required/],
    [{ SVC_BLOB_STORE: 's3', SVC_S3_BUCKET: 'b', SVC_S3_ACCESS_KEY_ID: 'k' }, /set together/],
    [{ SVC_BLOB_SIGNED_URL_DEFAULT_SECONDS: '7200', SVC_BLOB_SIGNED_URL_MAX_SECONDS: '3600' }, /must not exceed/],
  ])('inconsistent settings are refused at start-up: %j', (env, message) => {
    // loadConfig runs the cross-setting checks, so the service never starts with such a store.
    expect(() => loadConfig({ SVC_DATA_DIR: dataDir, ...env })).toThrow(message);
  });
});
