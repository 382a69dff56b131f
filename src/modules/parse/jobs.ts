/**
 * Queue handlers. `parse`: runs a queued parse (idempotent: a finished parse is left alone); a
 * file that cannot be parsed is a finished `failed` parse, while a failure on our side (store
 * down, parser process died) is thrown so the queue retries it with backoff; when the attempts
 * are spent the parse becomes `failed` with the last error. `parse_callback`: signs and POSTs the
 * callback once per attempt (each attempt recorded); a non-2xx or network failure is retried.
 */
import { ApiError } from '../../http/errors';
import { PermanentJobError, type JobHandler } from '../../infra/queue';
import type { Clock } from '../../lib/clock';
import type { GuardedClient } from '../../infra/web';
import type { DocumentParser } from '../../infra/parsers';
import { callbackBody, sendCallback, signCallback } from './callbacks';
import { parseBlob } from './executor';
import type { BlobsPort, ParseMeter } from './ports';
import type { ParseService } from './service';
import type { ParseStore } from './store';

interface Payload { parse_id: string }

export interface JobDeps {
  store: ParseStore;
  blobs: BlobsPort;
  parser: DocumentParser;
  service: Pick<ParseService, 'recordComplete'>;
  client: GuardedClient;
  clock: Clock;
  baseUrl: string;
  callbackTimeoutMs: number;
  /** Billing's metering (absent: nothing was charged). */
  meter?: Pick<ParseMeter, 'refundReceipt'>;
}

export function parseJobHandler(deps: JobDeps): JobHandler<Payload> {
  const { store, clock } = deps;
  /**
   * Marks the parse failed and gives its parse op back (the charge's receipt, kept with the parse) in
   * one transaction: only the move that succeeds refunds, so once, whichever instance runs it.
   */
  const failRefunded = (parseId: string, failure: { code: string; reason: string; message: string }) =>
    store.db.transaction().execute(async (trx) => {
      const row = await store.byId(parseId, trx);
      const failed = await store.fail(parseId, failure, clock.now(), trx);
      if (failed && row?.charge_receipt && deps.meter) await deps.meter.refundReceipt(trx, JSON.parse(row.charge_receipt) as object);
    });
  return {
    async run(job) {
      const row = await store.byId(job.payload.parse_id);
      if (!row || (row.status !== 'queued' && row.status !== 'running')) return;
      // The agent deleted the blob before the parse ran: nothing was parsed, so nothing is counted.
      const deleted = () => failRefunded(row.parse_id, { code: 'PARSE_FAILED', reason: 'blob_deleted', message: 'The blob was deleted before the parse ran' });
      let blob;
      try {
        blob = await deps.blobs.find(row.agent_id, row.blob_id);
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return void (await deleted());
        throw e;
      }
      // Deleted and the same bytes uploaded again since: a new blob under the same id, not this parse's.
      if (Number(blob.created_at) > Number(row.created_at)) return void (await deleted());
      await store.markRunning(row.parse_id, clock.now());
      const outcome = await parseBlob(deps, row, row.agent_id);
      if (!outcome.ok) {
        if (outcome.failure.reason === 'internal') throw new Error(outcome.failure.message);
        await store.fail(row.parse_id, outcome.failure, clock.now());
        return;
      }
      await deps.service.recordComplete({ ...row, status: 'running' }, outcome.json, outcome, clock.now());
    },
    // Failed on our side after every attempt: not the agent's to pay for.
    async onDead(job, error) {
      await failRefunded(job.payload.parse_id, { code: 'PARSE_FAILED', reason: 'internal', message: `The parse could not run: ${error}` });
    },
  };
}

export function callbackJobHandler(deps: JobDeps): JobHandler<Payload> {
  const { store, clock } = deps;
  return {
    async run(job) {
      const row = await store.byId(job.payload.parse_id);
      if (!row || row.status !== 'complete' || !row.callback_url) return;
      if (row.result === null) throw new PermanentJobError('the result is no longer stored');
      const now = clock.now();
      const body = row.callback_body ?? callbackBody(row, deps.baseUrl, now);
      const signature = signCallback(await store.callbackSecret(row.agent_id, now), body, now);
      await store.setCallbackMessage(row.parse_id, row.callback_body === null ? body : null, signature, now);
      const d = await sendCallback({ client: deps.client, store, clock, timeoutMs: deps.callbackTimeoutMs }, row, { body, signature, trigger: 'automatic' });
      if (d.status !== 'success') throw new Error(d.last_error ?? 'delivery failed');
    },
  };
}
