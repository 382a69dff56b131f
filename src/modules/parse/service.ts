/**
 * Parsing (see docs/blobs.md). POST /v1/blobs/{blob_id}/parse checks, in this order:
 * blob exists (404 BLOB_NOT_FOUND) → async requested but off (503 PARSE_ASYNC_DISABLED) → type
 * from the stored Content-Type (415 PARSE_UNSUPPORTED_TYPE) → sync size threshold (413
 * PARSE_TOO_LARGE_SYNC) → callback_url (422 CALLBACK_URL_INVALID) → per-minute rate by tier (429
 * PARSE_RATE_LIMIT) → parse quota through billing (429 PARSE_QUOTA_EXCEEDED) → work.
 * Sync: parse now, store the record with its result and chunks in one transaction, answer it.
 * Async: store a queued record and its queue job in one transaction, answer 202.
 */
import { randomUUID } from 'node:crypto';
import { ApiError } from '../../http/errors';
import { RateLimiterError, type RateLimiter } from '../../infra/limits';
import { detectParseKind, type DocumentParser } from '../../infra/parsers';
import type { JobQueue } from '../../infra/queue';
import { isWebError, type GuardedClient } from '../../infra/web';
import { iso, type Clock } from '../../lib/clock';
import { tierOf } from '../../lib/tiers';
import { callbackBody, sendCallback, signCallback } from './callbacks';
import { storeChunks, type ChunkIndexer } from './chunks';
import type { LexicalIndex } from '../../infra/lexical';
import { parseBlob } from './executor';
import type { BlobsPort, Caller, ParseMeter, TierResolver } from './ports';
import type { ParseRow, ParseStore } from './store';
import { deliveryView, parseView, parseViewJson } from './views';

export interface ParseSettings {
  syncMaxBytes: number;
  asyncEnabled: boolean;
  replayEnabled: boolean;
  replayPerMinute: number;
  callbackTimeoutMs: number;
  callbackMaxAttempts: number;
}

export interface ParseServiceDeps {
  store: ParseStore;
  blobs: BlobsPort;
  parser: DocumentParser;
  queue: JobQueue;
  client: GuardedClient;
  limiter: RateLimiter;
  clock: Clock;
  meter?: ParseMeter;
  indexer?: ChunkIndexer;
  /** The lexical index: chunk words are written with the parse's result. */
  lexical?: LexicalIndex;
  tierFor?: TierResolver;
  baseUrl: string;
  upgradeUrl: string;
  settings: ParseSettings;
  log?: (msg: string, err: unknown) => void;
}

export const PARSE_QUEUE = 'parse';
export const CALLBACK_QUEUE = 'parse_callback';
export const parseJobKey = (parseId: string) => `parse:${parseId}`;
export const callbackJobKey = (parseId: string) => `callback:${parseId}`;

const notFound = (blobId: string) => new ApiError(404, 'BLOB_NOT_FOUND', `No blob ${blobId}`, { blob_id: blobId });

export function createParseService(deps: ParseServiceDeps) {
  const { store, clock, settings: s } = deps;
  const tierFor: TierResolver = deps.tierFor ?? (async (_a, t) => tierOf(t));

  async function limit(key: string, perMinute: number, code: string, what: string): Promise<void> {
    if (perMinute <= 0) return;
    let d;
    try {
      d = await deps.limiter.hit(key, perMinute, 60_000);
    } catch (e) {
      if (e instanceof RateLimiterError) return deps.log?.(`${what} rate limiter unavailable; allowed`, e);
      throw e;
    }
    if (!d.allowed) {
      throw new ApiError(429, code, `At most ${perMinute} ${what} per minute; retry in ${d.retryAfterSeconds} s`,
        { retry_after_seconds: d.retryAfterSeconds, limit_per_minute: perMinute, upgrade_url: deps.upgradeUrl },
        { 'retry-after': String(d.retryAfterSeconds) });
    }
  }

  async function checkCallbackUrl(url: string): Promise<string> {
    try {
      return (await deps.client.validatePublicUrl(url, { httpsOnly: true })).href;
    } catch (e) {
      if (!isWebError(e)) throw e;
      throw new ApiError(422, 'CALLBACK_URL_INVALID', `callback_url refused: ${e.message}`, { field: 'body.callback_url', reason: e.reason });
    }
  }

  /**
   * In one transaction: the parse becomes complete, its chunks replace the blob's, the callback is
   * queued. A queued parse whose blob was deleted while it ran fails instead (blob_deleted): no
   * result, no chunks, no callback.
   */
  async function recordComplete(row: ParseRow, resultJson: string, result: Parameters<typeof storeChunks>[4], now: number): Promise<boolean> {
    return store.db.transaction().execute(async (trx) => {
      if (!(await store.lockBlob(trx, row.agent_id, row.blob_id, Number(row.created_at)))) {
        const failure = { code: 'PARSE_FAILED', reason: 'blob_deleted', message: 'The blob was deleted while it was parsed' };
        if (row.status === 'complete') {
          // A sync parse (not stored yet): recorded, and answered, as failed.
          Object.assign(row, { status: 'failed', result: null, error_code: failure.code, error_reason: failure.reason, error_message: failure.message });
          await store.insert(row, trx);
        } else {
          await store.fail(row.parse_id, failure, now, trx);
        }
        return false;
      }
      const moved = row.status === 'complete' ? (await store.insert(row, trx), true) : await store.complete(trx, row.parse_id, resultJson, now);
      if (!moved) return false;
      await storeChunks(trx, store, deps.indexer, { agentId: row.agent_id, blobId: row.blob_id, parseId: row.parse_id, now }, result, deps.lexical);
      if (row.callback_url) {
        await deps.queue.enqueue(CALLBACK_QUEUE, { parse_id: row.parse_id }, { dedupeKey: callbackJobKey(row.parse_id), maxAttempts: s.callbackMaxAttempts, trx });
      }
      return true;
    });
  }

  async function ownParse(caller: Caller, blobId: string, parseId: string): Promise<ParseRow> {
    const blob = await deps.blobs.find(caller.agentId, blobId); // a deleted blob takes its parses with it
    const row = await store.get(caller.agentId, blobId, parseId);
    // ...for good: the same bytes uploaded again are the same blob_id, a new blob without the old parses.
    if (!row || Number(row.created_at) < Number(blob.created_at)) throw notFound(blobId);
    return row;
  }

  return {
    recordComplete,

    async parse(caller: Caller, blobId: string, opts: { async: boolean; callbackUrl?: string }) {
      const blob = await deps.blobs.find(caller.agentId, blobId);
      if (opts.async && !s.asyncEnabled) {
        throw new ApiError(503, 'PARSE_ASYNC_DISABLED', 'Asynchronous parsing is disabled on this host; parse synchronously (blobs up to the sync threshold)', { sync_max_bytes: s.syncMaxBytes });
      }
      if (!detectParseKind(blob.content_type)) {
        throw new ApiError(415, 'PARSE_UNSUPPORTED_TYPE', `Cannot parse content type "${blob.content_type}"; supported: PDF, DOCX, CSV, XLSX (re-upload with the right Content-Type)`, {
          content_type: blob.content_type,
          supported: ['application/pdf', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'text/csv', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
        });
      }
      if (!opts.async && Number(blob.size_bytes) > s.syncMaxBytes) {
        throw new ApiError(413, 'PARSE_TOO_LARGE_SYNC', `Blob is ${blob.size_bytes} bytes, over the synchronous parse limit of ${s.syncMaxBytes}; use POST /v1/blobs/${blobId}/parse?async=true`, {
          size_bytes: Number(blob.size_bytes), sync_max_bytes: s.syncMaxBytes, async_url: `${deps.baseUrl}/v1/blobs/${blobId}/parse?async=true`,
        });
      }
      if (opts.callbackUrl !== undefined && !opts.async) {
        throw new ApiError(422, 'VALIDATION_FAILED', 'callback_url needs ?async=true', { field: 'body.callback_url' });
      }
      const callbackUrl = opts.callbackUrl === undefined ? null : await checkCallbackUrl(opts.callbackUrl);
      const tier = await tierFor(caller.agentId, caller.tier);
      await limit(`parse:${caller.agentId}`, tier.parsePerMinute, 'PARSE_RATE_LIMIT', 'parse requests');
      const charge = await deps.meter?.charge(caller.agentId, 'parse', { tier: caller.tier });
      // `_svc.usage` of the answer: the figures after this call's charge (a metered response).
      const svcUsage = charge?.usage ?? null;
      const now = clock.now();
      const row: ParseRow = {
        parse_id: randomUUID(), agent_id: caller.agentId, blob_id: blobId, sha256: blob.sha256, content_type: blob.content_type,
        mode: opts.async ? 'async' : 'sync', status: 'queued', callback_url: callbackUrl, result: null, error_code: null,
        error_reason: null, error_message: null, callback_body: null, callback_signature: null,
        // Async: the charge outlives this request, so what its refund needs is kept with the parse (jobs.ts, onDead).
        charge_receipt: opts.async && charge?.receipt ? JSON.stringify(charge.receipt) : null,
        created_at: now, started_at: null, completed_at: null, updated_at: now,
      };
      if (opts.async) {
        try {
          await store.db.transaction().execute(async (trx) => {
            await store.insert(row, trx);
            await deps.queue.enqueue(PARSE_QUEUE, { parse_id: row.parse_id }, { dedupeKey: parseJobKey(row.parse_id), trx });
          });
        } catch (e) {
          await charge?.refund();
          throw e;
        }
        deps.queue.kick();
        const out: Record<string, unknown> = { ...parseView(row), status_url: `${deps.baseUrl}/v1/blobs/${blobId}/parse/${row.parse_id}` };
        if (callbackUrl) out.callback_signing_secret = await store.callbackSecret(caller.agentId, now);
        return { code: 202 as const, body: out, svcUsage };
      }
      let outcome;
      try {
        outcome = await parseBlob(deps, blob, caller.agentId);
      } catch (e) {
        await charge?.refund();
        throw e;
      }
      const done = clock.now();
      Object.assign(row, { started_at: now, completed_at: done, updated_at: done });
      if (outcome.ok) {
        const { json } = outcome; // serialized by the parser process, stored and answered as is
        Object.assign(row, { status: 'complete', result: json });
        // false: the blob was deleted while it was parsed, and `row` now says so (failed, blob_deleted).
        if (!(await recordComplete(row, json, outcome, done))) return { code: 200 as const, body: parseView(row), svcUsage };
        // The result is already serialized: spliced in rather than parsed and serialized again.
        return { code: 200 as const, body: parseViewJson(row), svcUsage };
      }
      // The parser itself broke (not the file): the agent is not charged for it.
      if (outcome.failure.reason === 'internal') await charge?.refund();
      Object.assign(row, { status: 'failed', error_code: outcome.failure.code, error_reason: outcome.failure.reason, error_message: outcome.failure.message });
      await store.insert(row);
      return { code: 200 as const, body: parseView(row), svcUsage: outcome.failure.reason === 'internal' ? null : svcUsage };
    },

    async status(caller: Caller, blobId: string, parseId: string) {
      const row = await ownParse(caller, blobId, parseId);
      return parseViewJson(row, row.callback_url ? { callback_signing_secret: await store.callbackSecret(caller.agentId, clock.now()) } : {});
    },

    async deliveries(caller: Caller, blobId: string, parseId: string) {
      await ownParse(caller, blobId, parseId);
      const rows = await store.deliveries(caller.agentId, parseId);
      return { status: 'success' as const, parse_id: parseId, deliveries: rows.map(deliveryView), total: rows.length };
    },

    async replay(caller: Caller, blobId: string, parseId: string) {
      if (!s.replayEnabled) throw new ApiError(403, 'CALLBACK_REPLAY_DISABLED', 'Callback replay is not enabled on this host');
      const row = await ownParse(caller, blobId, parseId);
      if (row.status !== 'complete') throw new ApiError(422, 'PARSE_NOT_COMPLETE', `The parse is ${row.status}; only a complete parse has a callback to replay`, { parse_status: row.status });
      if (!row.callback_url) throw new ApiError(422, 'PARSE_CALLBACK_URL_MISSING', 'This parse was requested without a callback_url');
      if (row.result === null) throw new ApiError(422, 'PARSE_RESULT_MISSING', 'The result of this parse is no longer stored (retention); parse the blob again');
      await limit(`replay:${caller.agentId}`, s.replayPerMinute, 'CALLBACK_REPLAY_RATE_LIMIT', 'callback replays');
      const now = clock.now();
      let body = row.callback_body;
      let signature = row.callback_signature;
      if (body === null || signature === null) {
        body = body ?? callbackBody(row, deps.baseUrl, now);
        signature = signCallback(await store.callbackSecret(row.agent_id, now), body, now);
        await store.setCallbackMessage(row.parse_id, body, signature, now);
      }
      const d = await sendCallback({ client: deps.client, store, clock, timeoutMs: s.callbackTimeoutMs }, row, { body, signature, trigger: 'replay' });
      return { status: 'success' as const, parse_id: parseId, delivery: deliveryView(d) };
    },

    /** ParseSummaryPort of the blobs module. */
    async latest(agentId: string, blobIds: string[]) {
      const rows = await store.latest(agentId, blobIds);
      return new Map(rows.map((r) => [r.blob_id, {
        parse_id: r.parse_id, status: r.status, created_at: iso(Number(r.created_at)), completed_at: r.completed_at === null ? null : iso(Number(r.completed_at)),
      }]));
    },
  };
}

export type ParseService = ReturnType<typeof createParseService>;
