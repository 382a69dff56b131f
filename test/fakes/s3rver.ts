/**
 * A real S3-compatible server (s3rver) on 127.0.0.1, a free port and a private temp directory,
 * with one bucket ready. Used by the S3 blob store tests and anything that needs SVC_BLOB_STORE=s3.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// s3rver ships no type declarations; this is the part of its API used here.
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverCtor = new (options: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;

export interface FakeS3 {
  /** e.g. http://127.0.0.1:40123 (path-style addressing required). */
  endpoint: string;
  bucket: string;
  region: string;
  /** s3rver's fixed credentials. It rejects an unknown access key id but does not verify SigV4 signatures. */
  accessKeyId: string;
  secretAccessKey: string;
  /** Where s3rver keeps objects (for tests that look at what is stored). */
  directory: string;
  close(): Promise<void>;
}

export async function startFakeS3(bucket = 'svc-test'): Promise<FakeS3> {
  const directory = await mkdtemp(join(tmpdir(), 'svc-s3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    directory,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
