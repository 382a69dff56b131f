/**
 * SQL of blobs. Every per-agent query is scoped by agent_id. Lock order in every transaction:
 * the blob_contents row first (FOR UPDATE on PostgreSQL; SQLite transactions are exclusive), then
 * the agent's rows, so an upload, a delete and the sweeper never deadlock and always agree on
 * whether a content is still referenced (`released_at`).
 */
import type { Kysely, Transaction } from 'kysely';
import { engineOf } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import type { BlobsTable } from '../../infra/db/tables/blobs';

export type BlobRow = BlobsTable;
type Trx = Transaction<Database>;

/** The content is being removed by the sweeper right now; retry in a moment. */
export class ContentBusyError extends Error {}
/** The agent's aggregate cap would be exceeded. */
export class StorageLimitError extends Error {
  constructor(public readonly usedBytes: number, public readonly capBytes: number) {
    super('blob storage limit');
  }
}

export interface NewBlob {
  agentId: string;
  blobId: string;
  sha256: string;
  sizeBytes: number;
  contentType: string;
  filename: string | null;
  capBytes: number;
  now: number;
  /** A 'deleting' claim older than this is abandoned (its sweeper died) and may be taken over. */
  staleClaimMs: number;
}

export function createBlobRecords(db: Kysely<Database>) {
  const pg = engineOf(db) === 'postgres';

  async function lockContent(trx: Trx, sha256: string) {
    let q = trx.selectFrom('blob_contents').selectAll().where('sha256', '=', sha256);
    if (pg) q = q.forUpdate();
    return q.executeTakeFirst();
  }

  async function activeRefs(trx: Trx, sha256: string): Promise<number> {
    const r = await trx.selectFrom('blobs').select((e) => e.fn.countAll<number>().as('n'))
      .where('sha256', '=', sha256).where('deleted_at', 'is', null).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  return {
    async find(agentId: string, blobId: string): Promise<BlobRow | undefined> {
      return db.selectFrom('blobs').selectAll().where('agent_id', '=', agentId).where('blob_id', '=', blobId)
        .where('deleted_at', 'is', null).executeTakeFirst();
    },

    async list(agentId: string, offset: number, limit: number): Promise<{ rows: BlobRow[]; total: number }> {
      const [rows, count] = await Promise.all([
        db.selectFrom('blobs').selectAll().where('agent_id', '=', agentId).where('deleted_at', 'is', null)
          .orderBy('created_at', 'desc').orderBy('blob_id').offset(offset).limit(limit).execute(),
        db.selectFrom('blob_agents').select('blob_count').where('agent_id', '=', agentId).executeTakeFirst(),
      ]);
      return { rows, total: Number(count?.blob_count ?? 0) };
    },

    async usage(agentId: string): Promise<{ storageBytes: number; blobCount: number }> {
      const r = await db.selectFrom('blob_agents').select(['storage_bytes', 'blob_count']).where('agent_id', '=', agentId).executeTakeFirst();
      return { storageBytes: Number(r?.storage_bytes ?? 0), blobCount: Number(r?.blob_count ?? 0) };
    },

    /**
     * Records an uploaded content under the agent's blob id. `created` is false when the agent
     * already had these bytes (then only the declared content type and file name are refreshed).
     */
    async add(b: NewBlob): Promise<{ created: boolean; row: BlobRow }> {
      return db.transaction().execute(async (trx) => {
        await trx.insertInto('blob_contents').values({
          sha256: b.sha256, size_bytes: b.sizeBytes, state: 'live', released_at: null, state_changed_at: b.now, created_at: b.now,
        }).onConflict((oc) => oc.column('sha256').doNothing()).execute();
        const content = await lockContent(trx, b.sha256);
        if (!content) throw new ContentBusyError(); // the sweeper finished between our insert and lock
        if (content.state === 'deleting') {
          if (Number(content.state_changed_at) > b.now - b.staleClaimMs) throw new ContentBusyError();
        }
        const existing = await trx.selectFrom('blobs').selectAll().where('agent_id', '=', b.agentId).where('blob_id', '=', b.blobId).executeTakeFirst();
        if (existing && existing.sha256 !== b.sha256) throw new Error(`blob id collision for ${b.blobId}`);
        if (existing && existing.deleted_at === null) {
          const patch = { content_type: b.contentType, filename: b.filename ?? existing.filename, updated_at: b.now };
          await trx.updateTable('blobs').set(patch).where('agent_id', '=', b.agentId).where('blob_id', '=', b.blobId).execute();
          return { created: false, row: { ...existing, ...patch } };
        }
        await trx.insertInto('blob_agents').values({ agent_id: b.agentId, storage_bytes: 0, blob_count: 0 })
          .onConflict((oc) => oc.column('agent_id').doNothing()).execute();
        const grown = await trx.updateTable('blob_agents')
          .set((e) => ({ storage_bytes: e('storage_bytes', '+', b.sizeBytes), blob_count: e('blob_count', '+', 1) }))
          .where('agent_id', '=', b.agentId).where((e) => e(e('storage_bytes', '+', b.sizeBytes), '<=', b.capBytes))
          .executeTakeFirst();
        if (Number(grown.numUpdatedRows) === 0) {
          const used = await trx.selectFrom('blob_agents').select('storage_bytes').where('agent_id', '=', b.agentId).executeTakeFirstOrThrow();
          throw new StorageLimitError(Number(used.storage_bytes), b.capBytes);
        }
        const row: BlobRow = {
          agent_id: b.agentId, blob_id: b.blobId, sha256: b.sha256, size_bytes: b.sizeBytes, content_type: b.contentType,
          filename: b.filename, created_at: b.now, updated_at: b.now, deleted_at: null,
        };
        if (existing) {
          await trx.updateTable('blobs').set({ ...row }).where('agent_id', '=', b.agentId).where('blob_id', '=', b.blobId).execute();
        } else {
          await trx.insertInto('blobs').values(row).execute();
        }
        await trx.updateTable('blob_contents').set({ state: 'live', released_at: null, state_changed_at: b.now })
          .where('sha256', '=', b.sha256).execute();
        return { created: true, row };
      });
    },

    /** Undoes add() when the bytes could not be committed to the store. */
    async rollbackAdd(agentId: string, blobId: string, now: number): Promise<void> {
      await this.softDelete(agentId, blobId, now);
    },

    /** Soft-deletes an active blob; false when there was none. Releases the content if nobody else holds it. */
    async softDelete(agentId: string, blobId: string, now: number): Promise<BlobRow | undefined> {
      const row = await this.find(agentId, blobId);
      if (!row) return undefined;
      return db.transaction().execute(async (trx) => {
        await lockContent(trx, row.sha256);
        const res = await trx.updateTable('blobs').set({ deleted_at: now, updated_at: now })
          .where('agent_id', '=', agentId).where('blob_id', '=', blobId).where('deleted_at', 'is', null).executeTakeFirst();
        if (Number(res.numUpdatedRows) === 0) return undefined;
        await trx.updateTable('blob_agents')
          .set((e) => ({ storage_bytes: e('storage_bytes', '-', Number(row.size_bytes)), blob_count: e('blob_count', '-', 1) }))
          .where('agent_id', '=', agentId).execute();
        if ((await activeRefs(trx, row.sha256)) === 0) {
          await trx.updateTable('blob_contents').set({ released_at: now }).where('sha256', '=', row.sha256).where('state', '=', 'live').execute();
        }
        return row;
      });
    },

    /**
     * Sweeper, step 1: claims up to `limit` contents released before `cutoff` (or abandoned
     * mid-delete before `staleBefore`). Returns the claims to delete; a claim is its state_changed_at.
     */
    async claimReleased(cutoff: number, staleBefore: number, now: number, limit: number): Promise<{ sha256: string; claimedAt: number }[]> {
      const candidates = await db.selectFrom('blob_contents').select(['sha256', 'state', 'state_changed_at'])
        .where((e) => e.or([
          e.and([e('state', '=', 'live'), e('released_at', 'is not', null), e('released_at', '<=', cutoff)]),
          e.and([e('state', '=', 'deleting'), e('state_changed_at', '<=', staleBefore)]),
        ])).limit(limit).execute();
      const claimed: { sha256: string; claimedAt: number }[] = [];
      for (const c of candidates) {
        // Conditions on the row itself only: an upload that revived it in between makes this a no-op.
        let q = db.updateTable('blob_contents').set({ state: 'deleting', state_changed_at: now }).where('sha256', '=', c.sha256);
        q = c.state === 'live'
          ? q.where('state', '=', 'live').where('released_at', 'is not', null).where('released_at', '<=', cutoff)
          : q.where('state', '=', 'deleting').where('state_changed_at', '=', Number(c.state_changed_at));
        const r = await q.executeTakeFirst();
        if (Number(r.numUpdatedRows) > 0) claimed.push({ sha256: c.sha256, claimedAt: now });
      }
      return claimed;
    },

    /** Sweeper, step 2 (after the bytes are gone): forgets the content unless an upload took it over. */
    async finishDelete(sha256: string, claimedAt: number): Promise<boolean> {
      const r = await db.deleteFrom('blob_contents').where('sha256', '=', sha256).where('state', '=', 'deleting')
        .where('state_changed_at', '=', claimedAt).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    async contentState(sha256: string) {
      return db.selectFrom('blob_contents').selectAll().where('sha256', '=', sha256).executeTakeFirst();
    },
  };
}

export type BlobRecords = ReturnType<typeof createBlobRecords>;
