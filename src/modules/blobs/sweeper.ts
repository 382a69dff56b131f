/**
 * Reconciliation sweep: removes stored bytes whose last active blob row was deleted more than the
 * grace period ago (SVC_BLOB_DELETE_GRACE_SECONDS), across all agents, so content still held by
 * any live owner is never touched. Two steps around the store delete: claim (blob_contents →
 * 'deleting', conditional on the row still being released) and finish (forget the row if the
 * claim still stands). An upload of the same bytes meanwhile waits for the claim to finish and
 * then commits its bytes again; a claim whose sweeper died is retaken after `staleClaimMs`.
 */
import type { BlobStore } from '../../infra/blobstore';
import type { Clock } from '../../lib/clock';
import type { BlobRecords } from './store';

export interface SweepDeps {
  records: BlobRecords;
  store: BlobStore;
  clock: Clock;
  graceMs: number;
  staleClaimMs: number;
  batch?: number;
}

export async function sweepReleased(d: SweepDeps): Promise<{ removed: number; failed: number }> {
  let removed = 0;
  let failed = 0;
  for (;;) {
    const now = d.clock.now();
    const claims = await d.records.claimReleased(now - d.graceMs, now - d.staleClaimMs, now, d.batch ?? 100);
    if (claims.length === 0) break;
    for (const c of claims) {
      try {
        await d.store.delete(c.sha256);
        if (await d.records.finishDelete(c.sha256, c.claimedAt)) removed++;
      } catch {
        failed++; // left 'deleting'; retaken once the claim is stale
      }
    }
    if (failed > 0 || claims.length < (d.batch ?? 100)) break;
  }
  return { removed, failed };
}

/** Runs the sweep every `intervalMs` (real time); returns a stop function. */
export function startBlobSweeper(d: SweepDeps, intervalMs: number, onError: (e: unknown) => void): () => void {
  if (intervalMs <= 0) return () => {};
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    sweepReleased(d).catch(onError).finally(() => (busy = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
