/**
 * Builds the parse module for app.ts: document parser pool, durable job queue with its two
 * handlers (parse, parse_callback), guarded client for callbacks, parse service, blob search on
 * the shared vector runtime, result-retention sweep, and routes (public + internal queue target).
 */
import type { Config } from '../../config';
import type { DatabaseHandle } from '../../infra/db/database';
import type { EnvelopeBuilder } from '../../http/envelope';
import type { RateLimiter } from '../../infra/limits';
import { createDocumentParser, type DocumentParser } from '../../infra/parsers';
import { createJobQueue } from '../../infra/queue';
import type { VectorRuntime } from '../../infra/vectors/runtime';
import { createGuardedClient, type GuardedClient } from '../../infra/web';
import type { Clock } from '../../lib/clock';
import { BLOB_CHUNK_COLLECTION, BLOB_WINDOW_WORDS, chunkTextSource, dropChunks } from './chunks';
import { internalQueueRoutes } from './internal-routes';
import { callbackJobHandler, parseJobHandler } from './jobs';
import type { BlobsPort, ParseMeter, SearchUsageReader, TierResolver } from './ports';
import { parseRoutes } from './routes';
import { createBlobSearch } from './search';
import { createLexicalIndex } from '../../infra/lexical';
import { CALLBACK_QUEUE, createParseService, PARSE_QUEUE } from './service';
import { createParseStore } from './store';

export interface ParseModuleDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  envelope: EnvelopeBuilder;
  blobs: BlobsPort & { onDeleted(l: (agentId: string, blobId: string) => Promise<void>): void };
  limiter: RateLimiter;
  vectors?: Pick<VectorRuntime, 'embedder' | 'index' | 'indexer'> & { lexical?: VectorRuntime['lexical']; catchUpMs?: number };
  meter?: ParseMeter;
  usage?: SearchUsageReader;
  tierFor?: TierResolver;
  log?: (msg: string, err: unknown) => void;
  /** Tests and benchmarks may hand these in. */
  parser?: DocumentParser;
  client?: GuardedClient;
}

const HOUR = 3_600_000;

export function createParseModule(deps: ParseModuleDeps) {
  const { config, clock } = deps;
  const b = config.blobs;
  const baseUrl = config.core.baseUrl;
  const store = createParseStore(deps.database.db);
  const parser = deps.parser ?? createDocumentParser({ concurrency: b.parseConcurrency });
  const client = deps.client ?? createGuardedClient({
    allowLoopback: config.core.outboundAllowLoopback,
    allowedPorts: config.web.outboundAllowedPorts,
    userAgent: 'svc-callbacks/1.0',
    timeoutMs: b.callbackTimeoutMs,
    maxRedirects: 0,
  });
  const queue = createJobQueue(deps.database.db, {
    clock,
    pollIntervalMs: b.queuePollIntervalMs,
    concurrency: Math.max(1, b.queueConcurrency),
    leaseMs: b.queueLeaseSeconds * 1000,
    maxAttempts: b.queueMaxAttempts,
    backoffBaseMs: b.queueRetryBaseSeconds * 1000,
    backoffMaxMs: HOUR,
    onError: (m, e) => deps.log?.(m, e),
  });
  const indexer = deps.vectors?.embedder ? deps.vectors.indexer : undefined;
  const lexical = deps.vectors?.lexical ?? createLexicalIndex(deps.database);
  indexer?.addSource(BLOB_CHUNK_COLLECTION, chunkTextSource(store), { windowWords: BLOB_WINDOW_WORDS });
  const upgradeUrl = config.billing.billingPageUrl ?? `${baseUrl}/billing`;
  const service = createParseService({
    store, blobs: deps.blobs, parser, queue, client, limiter: deps.limiter, clock, meter: deps.meter, indexer, lexical,
    tierFor: deps.tierFor, baseUrl, upgradeUrl, log: deps.log,
    settings: {
      syncMaxBytes: b.parseSyncMaxBytes,
      asyncEnabled: b.parseAsyncEnabled,
      replayEnabled: b.callbackReplayEnabled,
      replayPerMinute: b.callbackReplayPerMinute,
      callbackTimeoutMs: b.callbackTimeoutMs,
      callbackMaxAttempts: b.callbackMaxAttempts,
    },
  });
  const jobDeps = { store, blobs: deps.blobs, parser, service, client, clock, baseUrl, callbackTimeoutMs: b.callbackTimeoutMs, meter: deps.meter };
  queue.register(PARSE_QUEUE, parseJobHandler(jobDeps));
  queue.register(CALLBACK_QUEUE, { ...callbackJobHandler(jobDeps), retry: { baseMs: b.callbackRetryBaseSeconds * 1000, maxMs: 6 * HOUR } });
  deps.blobs.onDeleted((agentId, blobId) => dropChunks(store, indexer, agentId, blobId, lexical));
  const search = createBlobSearch({
    store, blobs: deps.blobs, embedder: deps.vectors?.embedder, index: deps.vectors?.index, indexer, lexical, db: deps.database.db, catchUpMs: deps.vectors?.catchUpMs,
    meter: deps.meter, usage: deps.usage, baseUrl, log: deps.log,
  });

  const retentionMs = b.parseResultRetentionDays * 24 * HOUR;
  const expireResults = () => (retentionMs > 0 ? store.expireResults(clock.now() - retentionMs, clock.now()) : Promise.resolve(0));
  // Runs with the blob housekeeping (SVC_BLOB_SWEEP_INTERVAL_SECONDS).
  const every = b.sweepIntervalSeconds * 1000;
  const retentionTimer = retentionMs > 0 && every > 0
    ? setInterval(() => void expireResults().catch((e) => deps.log?.('parse result retention failed', e)), every) : undefined;
  retentionTimer?.unref();

  return {
    service, search, queue, store,
    /** The blobs module shows the latest parse of each blob. */
    summaries: { latest: (agentId: string, ids: string[]) => service.latest(agentId, ids) },
    expireResults,
    /** Bytes of chunk text kept for search (billing's blob_embed_storage_bytes). */
    embedStorageBytes: (agentId: string) => store.chunkBytes(agentId),
    routes: parseRoutes({ parse: service, search, envelope: deps.envelope }),
    internalRoutes: internalQueueRoutes({ queue, secret: b.queueSecret, clock }),
    start() {
      if (b.queueConcurrency > 0) queue.start();
    },
    async close() {
      if (retentionTimer) clearInterval(retentionTimer);
      await queue.stop(2000);
      if (!deps.parser) await parser.close();
      if (!deps.client) await client.close();
    },
  };
}

export type ParseModule = ReturnType<typeof createParseModule>;
