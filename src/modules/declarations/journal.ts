/**
 * Journal commitments: an agent commits the SHA-256 digest of its local journal material (computed
 * on the client over "svc:sealed-journal:v1\n" + agent id + "\n" + material) and svc stores only the
 * digest, as a trust log entry: the entry's index and inclusion proof let the agent show later that
 * it held that material by then. A body that carries anything else (the material, a preimage) is
 * refused: only the digest is ever accepted.
 */
import type { Kysely } from 'kysely';
import { ApiError } from '../../http/errors';
import { isUniqueViolation } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import type { JournalCommitmentsTable } from '../../infra/db/tables/declarations';
import { iso, type Clock } from '../../lib/clock';
import { isUuid, newId } from '../../lib/ids';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import type { DeclarationsStore } from './store';

export const JOURNAL_LABEL = 'svc:sealed-journal:v1';
export const ATTESTATION_SOURCES = ['mcp_v163', 'langgraph_v163', 'api_v163'] as const;
export const ATTESTATION_CLIENT_MAX = 128;
/** The only fields a commit body may carry. */
const BODY_FIELDS = ['commitment_hash', 'commit_attestation'];
const ATTESTATION_FIELDS = ['source', 'client'];
/** Names that say a field holds journal material (anywhere in the body). */
const PREIMAGE_NAMES = /^(material|preimage|pre_image|plaintext|plain_text|journal|journal_material|content|contents|text|entries|entry|data|payload|message|raw|secret)$/i;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

export interface CommitInput { [field: string]: unknown }

/** The client's digest: base64 (standard or url-safe, padded or not) of exactly 32 bytes; the standard form, or a reason. */
export function commitmentHashOf(value: unknown): { hash: string } | { problem: string } {
  if (value === undefined || value === null) return { problem: 'commitment_hash is required: base64 of the 32-byte SHA-256 digest' };
  if (typeof value !== 'string') return { problem: 'commitment_hash must be a string: base64 of the 32-byte SHA-256 digest' };
  const text = value.trim();
  if (!BASE64.test(text)) return { problem: 'commitment_hash is not base64' };
  const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length !== 32) return { problem: `commitment_hash must decode to exactly 32 bytes (a SHA-256 digest); it decodes to ${bytes.length}` };
  // Only one text per digest: bits base64 leaves over in the last character must be zero (as it writes them).
  if (bytes.toString('base64').replace(/=+$/, '') !== text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '')) {
    return { problem: 'commitment_hash is not the canonical base64 of 32 bytes (non-zero padding bits)' };
  }
  return { hash: bytes.toString('base64') };
}

/** Paths of fields whose name says they hold material, anywhere in the body. */
function preimageFields(value: unknown, path = ''): string[] {
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => preimageFields(v, `${path}[${i}]`));
  return Object.entries(value).flatMap(([k, v]) => [...(PREIMAGE_NAMES.test(k) ? [path ? `${path}.${k}` : k] : []), ...preimageFields(v, path ? `${path}.${k}` : k)]);
}

export function createJournalService(deps: { db: Kysely<Database>; store: DeclarationsStore; log: TrustLog; epochs: Epochs; clock: Clock; agentExists: (id: string) => Promise<boolean> }) {
  const { db, store, log, epochs, clock } = deps;

  const view = (r: JournalCommitmentsTable) => ({
    commitment_id: r.commitment_id,
    agent_id: r.agent_id,
    commitment_hash: r.commitment_hash,
    commit_attestation: r.attestation_source === null ? null : { source: r.attestation_source, ...(r.attestation_client !== null ? { client: r.attestation_client } : {}) },
    epoch: r.epoch,
    committed_at: iso(Number(r.committed_at)),
    log_index: Number(r.log_index),
  });

  function validate(body: CommitInput) {
    const material = preimageFields(body);
    const unknown = Object.keys(body).filter((k) => !BODY_FIELDS.includes(k));
    if (material.length > 0 || unknown.length > 0) {
      throw new ApiError(422, 'JOURNAL_PREIMAGE_FORBIDDEN',
        `Only the digest is accepted: send commitment_hash (and optionally commit_attestation) and nothing of the journal itself; refused field(s): ${[...new Set([...material, ...unknown])].join(', ')}`,
        { fields: [...new Set([...material, ...unknown])] });
    }
    const hash = commitmentHashOf(body.commitment_hash);
    if ('problem' in hash) throw new ApiError(422, 'JOURNAL_HASH_INVALID', hash.problem, { field: 'body.commitment_hash' });
    const a = body.commit_attestation;
    let attestation: { source: string; client: string | null } | null = null;
    if (a !== undefined && a !== null) {
      const bad = (why: string) => new ApiError(422, 'JOURNAL_ATTESTATION_INVALID', `commit_attestation ${why}`, { field: 'body.commit_attestation', sources: [...ATTESTATION_SOURCES] });
      if (typeof a !== 'object' || Array.isArray(a)) throw bad('must be an object {source, client?}');
      const extra = Object.keys(a).filter((k) => !ATTESTATION_FIELDS.includes(k));
      if (extra.length > 0) throw bad(`has fields it does not define: ${extra.join(', ')}`);
      const { source, client } = a as { source?: unknown; client?: unknown };
      if (typeof source !== 'string' || !(ATTESTATION_SOURCES as readonly string[]).includes(source)) throw bad(`source must be one of: ${ATTESTATION_SOURCES.join(', ')}`);
      if (client !== undefined && client !== null && (typeof client !== 'string' || client.length < 1 || client.length > ATTESTATION_CLIENT_MAX || /[\u0000-\u001f\u007f]/.test(client))) {
        throw bad(`client must be a string of 1 to ${ATTESTATION_CLIENT_MAX} characters without control characters`);
      }
      attestation = { source, client: typeof client === 'string' ? client : null };
    }
    return { hash: hash.hash, attestation };
  }

  const duplicate = (r: JournalCommitmentsTable) => new ApiError(409, 'JOURNAL_COMMITMENT_DUPLICATE',
    'This agent already committed this digest; the first commitment stands', { commitment: view(r) });

  return {
    async commit(agentId: string, body: CommitInput) {
      const { hash, attestation } = validate(body);
      const existing = await store.findCommitment(agentId, hash);
      if (existing) throw duplicate(existing);
      const now = clock.now();
      try {
        const row = await db.transaction().execute(async (trx) => {
          const epoch = await epochs.current(agentId, trx);
          const r: JournalCommitmentsTable = {
            commitment_id: newId(), agent_id: agentId, commitment_hash: hash, attestation_source: attestation?.source ?? null,
            attestation_client: attestation?.client ?? null, epoch, committed_at: now, log_index: 0,
          };
          const appended = await log.append(trx, {
            kind: 'journal.committed', agentId, epoch, at: now,
            data: { commitment_id: r.commitment_id, commitment_hash: hash, commit_attestation: attestation },
          });
          r.log_index = appended.index;
          await store.insertCommitment(trx, r);
          return { r, leafHash: appended.leafHash };
        });
        return { status: 'success', ...view(row.r), leaf_hash: Buffer.from(row.leafHash, 'hex').toString('base64') };
      } catch (e) {
        // The same digest from two requests at once: the first stands.
        if (!isUniqueViolation(e)) throw e;
        const first = await store.findCommitment(agentId, hash);
        if (!first) throw e;
        throw duplicate(first);
      }
    },

    async list(agentId: string, isPublic: boolean, q: { limit?: number; cursor?: string }) {
      const id = isUuid(agentId) ? agentId.toLowerCase() : undefined;
      if (!id || (isPublic && !(await deps.agentExists(id)))) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      const limit = q.limit ?? 20;
      let before: number | undefined;
      if (q.cursor !== undefined) {
        if (!/^\d{1,15}$/.test(q.cursor)) throw new ApiError(422, 'INVALID_CURSOR', 'cursor must be the next_cursor of an earlier page');
        before = Number(q.cursor);
      }
      const rows = await store.commitments(id, limit + 1, before);
      const page = rows.slice(0, limit);
      return {
        status: 'success',
        agent_id: id,
        commitments: page.map(view),
        total: await store.countCommitments(id),
        next_cursor: rows.length > limit ? String(Number(page[page.length - 1].log_index)) : null,
      };
    },
  };
}

export type JournalService = ReturnType<typeof createJournalService>;
