/**
 * SQL of parse jobs, callback deliveries, search chunks and callback secrets. Every per-agent read
 * is scoped by agent_id. Status moves are conditional (WHERE status IN ...), so a job that runs
 * twice (a lease taken over) cannot overwrite a finished parse.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { engineOf } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import type { ParseJobsTable, ParseDeliveriesTable, BlobChunksTable } from '../../infra/db/tables/blobs';

export type ParseRow = ParseJobsTable;
export type DeliveryRow = ParseDeliveriesTable;
export type ChunkRow = BlobChunksTable;
export type Trx = Transaction<Database>;
type Q = Kysely<Database> | Trx;

export function createParseStore(db: Kysely<Database>) {
  const pg = engineOf(db) === 'postgres';
  return {
    db,
    async insert(row: ParseRow, trx?: Trx): Promise<void> {
      await (trx ?? db).insertInto('parse_jobs').values(row).execute();
    },

    async get(agentId: string, blobId: string, parseId: string): Promise<ParseRow | undefined> {
      return db.selectFrom('parse_jobs').selectAll().where('parse_id', '=', parseId).where('agent_id', '=', agentId)
        .where('blob_id', '=', blobId).executeTakeFirst();
    },

    /** Unscoped read by id: only for the queue handlers, which act for the job's own agent. */
    async byId(parseId: string, q: Q = db): Promise<ParseRow | undefined> {
      return q.selectFrom('parse_jobs').selectAll().where('parse_id', '=', parseId).executeTakeFirst();
    },

    async markRunning(parseId: string, now: number): Promise<boolean> {
      const r = await db.updateTable('parse_jobs').set({ status: 'running', started_at: now, updated_at: now })
        .where('parse_id', '=', parseId).where('status', 'in', ['queued', 'running']).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async complete(q: Q, parseId: string, result: string, now: number): Promise<boolean> {
      const r = await q.updateTable('parse_jobs').set({ status: 'complete', result, completed_at: now, updated_at: now })
        .where('parse_id', '=', parseId).where('status', 'in', ['queued', 'running']).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async fail(parseId: string, e: { code: string; reason: string; message: string }, now: number, q: Q = db): Promise<boolean> {
      const r = await q.updateTable('parse_jobs').set({
        status: 'failed', error_code: e.code, error_reason: e.reason, error_message: e.message, completed_at: now, updated_at: now,
      }).where('parse_id', '=', parseId).where('status', 'in', ['queued', 'running']).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async setCallbackMessage(parseId: string, body: string | null, signature: string, now: number): Promise<void> {
      const set = body === null ? { callback_signature: signature, updated_at: now } : { callback_body: body, callback_signature: signature, updated_at: now };
      await db.updateTable('parse_jobs').set(set).where('parse_id', '=', parseId).execute();
    },

    /**
     * Latest parse per blob (for blob list/meta), of the blob's current upload: the same bytes
     * deleted and uploaded again are the same blob_id, and the parses from before are not theirs.
     */
    async latest(agentId: string, blobIds: string[]): Promise<ParseRow[]> {
      if (blobIds.length === 0) return [];
      const rows = await db.selectFrom('parse_jobs as p')
        .innerJoin('blobs as b', (j) => j.onRef('b.agent_id', '=', 'p.agent_id').onRef('b.blob_id', '=', 'p.blob_id'))
        .select(['p.parse_id', 'p.blob_id', 'p.status', 'p.created_at', 'p.completed_at'])
        .where('p.agent_id', '=', agentId).where('p.blob_id', 'in', blobIds).whereRef('p.created_at', '>=', 'b.created_at')
        .orderBy('p.created_at', 'desc').orderBy('p.parse_id', 'desc').execute();
      const seen = new Set<string>();
      return rows.filter((r) => (seen.has(r.blob_id) ? false : (seen.add(r.blob_id), true))) as ParseRow[];
    },

    /** Drops results (and the callback copy holding one) of parses completed before `cutoff`. */
    async expireResults(cutoff: number, now: number): Promise<number> {
      const r = await db.updateTable('parse_jobs').set({ result: null, callback_body: null, updated_at: now })
        .where('completed_at', '<', cutoff).where('result', 'is not', null).executeTakeFirst();
      return Number(r.numUpdatedRows);
    },

    // ---- deliveries ----
    async addDelivery(d: Omit<DeliveryRow, 'attempt_number'>): Promise<DeliveryRow> {
      // attempt_number is per parse; the unique index settles a race between two senders.
      for (let tries = 0; ; tries++) {
        const last = await db.selectFrom('parse_deliveries').select((e) => e.fn.max('attempt_number').as('n'))
          .where('parse_id', '=', d.parse_id).executeTakeFirst();
        const row = { ...d, attempt_number: Number(last?.n ?? 0) + 1 };
        try {
          await db.insertInto('parse_deliveries').values(row).execute();
          return row;
        } catch (e) {
          if (tries >= 3) throw e;
        }
      }
    },

    async deliveries(agentId: string, parseId: string): Promise<DeliveryRow[]> {
      return db.selectFrom('parse_deliveries').selectAll().where('agent_id', '=', agentId).where('parse_id', '=', parseId)
        .orderBy('attempt_number', 'desc').execute();
    },

    // ---- chunks ----
    /** Replaces the blob's chunks with those of this parse; returns the chunk ids now live and those gone. */
    /**
     * Takes the blob's row lock for this transaction (PostgreSQL; SQLite transactions already take
     * turns) and says whether the blob is still there: a DELETE that committed first is seen. With
     * `parseCreatedAt`, also whether it is still the upload that parse was asked for.
     */
    async lockBlob(trx: Trx, agentId: string, blobId: string, parseCreatedAt?: number): Promise<boolean> {
      let blob = trx.selectFrom('blobs').select(['deleted_at', 'created_at']).where('agent_id', '=', agentId).where('blob_id', '=', blobId);
      if (pg) blob = blob.forUpdate();
      const row = await blob.executeTakeFirst();
      if (row === undefined || row.deleted_at !== null) return false;
      // The same bytes deleted and uploaded again are a new blob under the same id: a parse asked for
      // before that upload belongs to the deleted one.
      return parseCreatedAt === undefined || Number(row.created_at) <= parseCreatedAt;
    },

    async replaceChunks(trx: Trx, agentId: string, blobId: string, parseId: string, chunks: { index: number; text: string; location: unknown }[], now: number) {
      // Two parses of one blob may finish at once (a sync parse and a queued one, or two instances):
      // on PostgreSQL each would delete the chunks it saw and insert its own, and the second insert
      // would collide with the first's rows. The blob's row lock makes them take turns (SQLite
      // transactions already do).
      // The same lock orders the parse after a DELETE of the blob that committed first: a blob deleted
      // while it was parsed keeps no chunks (the delete's own clean-up has already run).
      if (!(await this.lockBlob(trx, agentId, blobId))) chunks = [];
      const before = await trx.selectFrom('blob_chunks').select('chunk_index').where('agent_id', '=', agentId).where('blob_id', '=', blobId).execute();
      await trx.deleteFrom('blob_chunks').where('agent_id', '=', agentId).where('blob_id', '=', blobId).execute();
      for (let i = 0; i < chunks.length; i += 200) {
        await trx.insertInto('blob_chunks').values(chunks.slice(i, i + 200).map((c) => ({
          agent_id: agentId, blob_id: blobId, chunk_index: c.index, parse_id: parseId, text: c.text, location: JSON.stringify(c.location ?? {}), created_at: now,
        }))).execute();
      }
      const live = new Set(chunks.map((c) => c.index));
      return { gone: before.map((r) => Number(r.chunk_index)).filter((i) => !live.has(i)), kept: chunks.length };
    },

    async deleteChunks(trx: Trx, agentId: string, blobId: string): Promise<number[]> {
      const rows = await trx.selectFrom('blob_chunks').select('chunk_index').where('agent_id', '=', agentId).where('blob_id', '=', blobId).execute();
      await trx.deleteFrom('blob_chunks').where('agent_id', '=', agentId).where('blob_id', '=', blobId).execute();
      return rows.map((r) => Number(r.chunk_index));
    },

    async chunks(agentId: string, keys: { blobId: string; index: number }[]): Promise<ChunkRow[]> {
      if (keys.length === 0) return [];
      return db.selectFrom('blob_chunks').selectAll().where('agent_id', '=', agentId)
        .where((e) => e.or(keys.map((k) => e.and([e('blob_id', '=', k.blobId), e('chunk_index', '=', k.index)])))).execute();
    },

    async chunkBytes(agentId: string): Promise<number> {
      const r = await db.selectFrom('blob_chunks').select((e) => e.fn.sum<number>(e.fn('length', ['text'])).as('n'))
        .where('agent_id', '=', agentId).executeTakeFirst();
      return Number(r?.n ?? 0);
    },

    // ---- callback secrets ----
    async callbackSecret(agentId: string, now: number): Promise<string> {
      const existing = await db.selectFrom('callback_secrets').select('secret').where('agent_id', '=', agentId).executeTakeFirst();
      if (existing) return existing.secret;
      await db.insertInto('callback_secrets').values({ agent_id: agentId, secret: `whsec_${randomBytes(32).toString('base64url')}`, created_at: now })
        .onConflict((oc) => oc.column('agent_id').doNothing()).execute();
      const row = await db.selectFrom('callback_secrets').select('secret').where('agent_id', '=', agentId).executeTakeFirstOrThrow();
      return row.secret;
    },
  };
}

export type ParseStore = ReturnType<typeof createParseStore>;
