/**
 * Builds the blobs module for app.ts: byte store (fs or S3, from config), records, signer,
 * service, reconciliation sweeper and routes.
 */
import type { Config } from '../../config';
import { createBlobStore, type BlobStore } from '../../infra/blobstore';
import type { DatabaseHandle } from '../../infra/db/database';
import type { Clock } from '../../lib/clock';
import type { ParseSummaryPort, TierResolver } from './ports';
import { blobRoutes } from './routes';
import { createBlobService } from './service';
import { createUrlSigner } from './signed-url';
import { createBlobRecords } from './store';
import { startBlobSweeper, sweepReleased } from './sweeper';

export interface BlobsModuleDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  tierFor?: TierResolver;
  parses?: () => ParseSummaryPort | undefined;
  log?: (msg: string, err: unknown) => void;
  /** Tests and benchmarks may hand in a store. */
  store?: BlobStore;
}

/** A sweeper claim older than this is considered abandoned. */
const STALE_CLAIM_MS = 60_000;

export async function createBlobsModule(deps: BlobsModuleDeps) {
  const { config, clock } = deps;
  const b = config.blobs;
  const store = deps.store ?? (await createBlobStore(config, { clock }));
  const records = createBlobRecords(deps.database.db);
  const signer = createUrlSigner(b.signingSecret);
  const service = createBlobService({
    records, store, clock, signer,
    baseUrl: config.core.baseUrl,
    upgradeUrl: config.billing.billingPageUrl ?? `${config.core.baseUrl}/billing`,
    maxBytes: b.maxBytes,
    signedUrlDefaultSeconds: b.signedUrlDefaultSeconds,
    signedUrlMaxSeconds: b.signedUrlMaxSeconds,
    tierFor: deps.tierFor,
    parses: deps.parses,
    staleClaimMs: STALE_CLAIM_MS,
  });
  const sweepDeps = { records, store, clock, graceMs: b.deleteGraceSeconds * 1000, staleClaimMs: STALE_CLAIM_MS };
  const stopSweeper = startBlobSweeper(sweepDeps, b.sweepIntervalSeconds * 1000, (e) => deps.log?.('blob sweep failed', e));
  return {
    service,
    store,
    /** One reconciliation pass now (tests, operators). */
    sweep: () => sweepReleased(sweepDeps),
    routes: blobRoutes({ blobs: service, signer, clock, maxBytes: b.maxBytes, signedUrlMaxSeconds: b.signedUrlMaxSeconds }),
    async close() {
      stopSweeper();
      if (!deps.store) await store.close();
    },
  };
}

export type BlobsModule = Awaited<ReturnType<typeof createBlobsModule>>;
