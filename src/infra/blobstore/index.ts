/**
 * Content-addressed blob storage: `createBlobStore(config)` picks the backend named by
 * SVC_BLOB_STORE (fs | s3). See docs/blobstore.md.
 */
import { join } from 'node:path';
import type { Config } from '../../config';
import { blobsSettingsProblems } from '../../config/blobs';
import type { Clock } from '../../lib/clock';
import { FsBlobStore } from './fs-store';
import { BlobStoreUnavailableError, type BlobStore } from './types';

export * from './types';
export { FsBlobStore, type FsBlobStoreOptions } from './fs-store';
export type { S3BlobStoreOptions, S3ClientSettings } from './s3-store';

/** Local paths the stores use under SVC_DATA_DIR. */
export function blobPaths(dataDir: string): { fsRoot: string; s3Staging: string } {
  return { fsRoot: join(dataDir, 'blobs'), s3Staging: join(dataDir, 'blob-staging') };
}

export async function createBlobStore(config: Pick<Config, 'core' | 'blobs'>, opts: { clock?: Clock } = {}): Promise<BlobStore> {
  const b = config.blobs;
  const problems = blobsSettingsProblems(b);
  if (problems.length > 0) throw new BlobStoreUnavailableError(`blob store misconfigured: ${problems.join('; ')}`);
  const paths = blobPaths(config.core.dataDir);
  if (b.store === 'fs') return FsBlobStore.open({ root: paths.fsRoot, clock: opts.clock });
  // Loaded only for an S3 store: the AWS SDK is a large module a filesystem store never needs.
  const { createS3Client, S3BlobStore } = await import('./s3-store');
  return S3BlobStore.open({
    client: createS3Client({
      endpoint: b.s3Endpoint,
      region: b.s3Region,
      accessKeyId: b.s3AccessKeyId,
      secretAccessKey: b.s3SecretAccessKey,
      forcePathStyle: b.s3ForcePathStyle,
    }),
    bucket: b.s3Bucket!,
    prefix: b.s3Prefix,
    stagingDir: paths.s3Staging,
    clock: opts.clock,
  });
}
