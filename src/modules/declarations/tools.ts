/**
 * Tool passports: an agent registers the tools it runs (name, description, an optional Ed25519
 * public key the tool signs with, a risk class and a model provenance, both declared by the
 * registrant and not verified by svc), rotates a tool's key and revokes it. Each is a trust log
 * entry; the public passport is at GET /v1/tools/{tool_id}/passport (`did:svc:tool:<tool_id>`) and
 * never carries private material (svc never sees a tool's private key).
 */
import { createPublicKey } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ApiError } from '../../http/errors';
import { isUniqueViolation } from '../../infra/db/dialect';
import type { Database } from '../../infra/db/schema';
import type { ToolPassportsTable } from '../../infra/db/tables/declarations';
import { iso, type Clock } from '../../lib/clock';
import { KeyFormatError, parseEd25519PublicKey, publicKeyPem } from '../../lib/ed25519';
import { sha256hex } from '../../lib/hash';
import { isUuid, newId } from '../../lib/ids';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import type { DeclarationsStore } from './store';

export const RISK_CLASSES = ['low', 'high'] as const;
/** Active tool passports one agent may hold. */
export const MAX_ACTIVE_TOOLS = 100;
export const RISK_CLASS_NOTICE = 'risk_class is declared by the registrant; svc does not verify it.';
export const PROVENANCE_NOTICE = 'The model provenance is declared by the developer; svc does not verify it.';

export interface RegisterToolInput {
  name: string;
  description: string;
  public_key?: string | null;
  risk_class: string;
  model_provenance_hash?: string | null;
  model_provenance_label?: string | null;
}

const SPKI_PREFIX_LENGTH = 12;
/** Raw 32 bytes (base64) of a PEM Ed25519 public key: what the log records. */
const rawKey = (pem: string) => createPublicKey(pem).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX_LENGTH).toString('base64');
const fingerprint = (pem: string) => sha256hex(createPublicKey(pem).export({ format: 'der', type: 'spki' }));

function toolKey(input: string): string {
  try {
    return publicKeyPem(parseEd25519PublicKey(input));
  } catch (e) {
    throw new ApiError(422, 'INVALID_TOOL_PUBLIC_KEY', `public_key is not a valid Ed25519 public key: ${e instanceof KeyFormatError ? e.message : 'unreadable key'}`, { field: 'body.public_key' });
  }
}

export function createToolService(deps: { db: Kysely<Database>; store: DeclarationsStore; log: TrustLog; epochs: Epochs; clock: Clock; baseUrl: string }) {
  const { db, store, log, epochs, clock } = deps;

  const passportView = (r: ToolPassportsTable) => ({
    did: `did:svc:tool:${r.tool_id}`,
    tool_id: r.tool_id,
    name: r.name,
    description: r.description,
    owner: { agent_id: r.agent_id, did: `did:svc:${r.agent_id}`, passport_url: `${deps.baseUrl}/v1/agents/${r.agent_id}/passport` },
    public_key: r.public_key_pem,
    public_key_sha256: r.public_key_pem === null ? null : fingerprint(r.public_key_pem),
    key_algorithm: r.public_key_pem === null ? null : 'ed25519',
    key_version: r.key_version,
    risk_class: r.risk_class,
    risk_class_notice: RISK_CLASS_NOTICE,
    model_provenance: r.model_provenance_hash === null && r.model_provenance_label === null
      ? null
      : { hash: r.model_provenance_hash, label: r.model_provenance_label, verified: false, notice: PROVENANCE_NOTICE },
    status: r.revoked_at === null ? 'active' : 'revoked',
    created_at: iso(Number(r.created_at)),
    rotated_at: r.rotated_at === null ? null : iso(Number(r.rotated_at)),
    revoked_at: r.revoked_at === null ? null : iso(Number(r.revoked_at)),
    log_indexes: {
      registered: Number(r.created_log_index),
      rotated: r.rotated_log_index === null ? null : Number(r.rotated_log_index),
      revoked: r.revoked_log_index === null ? null : Number(r.revoked_log_index),
    },
    passport_url: `${deps.baseUrl}/v1/tools/${r.tool_id}/passport`,
  });

  /** The agent's own tool, or 404 TOOL_PASSPORT_NOT_FOUND (unknown, malformed or another agent's: existence is not told apart). */
  async function own(agentId: string, toolId: string, trx?: Parameters<DeclarationsStore['findTool']>[1]) {
    const r = isUuid(toolId) ? await store.findTool(toolId.toLowerCase(), trx) : undefined;
    if (!r || r.agent_id !== agentId) throw new ApiError(404, 'TOOL_PASSPORT_NOT_FOUND', 'You have no tool passport with this tool_id');
    return r;
  }
  const revoked = (r: ToolPassportsTable) => new ApiError(409, 'TOOL_PASSPORT_REVOKED', `Tool passport ${r.tool_id} was revoked at ${iso(Number(r.revoked_at))}; register a new one`);

  return {
    async register(agentId: string, input: RegisterToolInput) {
      const pem = input.public_key === undefined || input.public_key === null ? null : toolKey(input.public_key);
      const now = clock.now();
      try {
        const row = await db.transaction().execute(async (trx) => {
          // Under the log's append lock: concurrent registrations are counted one after another.
          await log.lockHeadFor(trx);
          if (await store.countActiveTools(agentId, trx) >= MAX_ACTIVE_TOOLS) {
            throw new ApiError(409, 'TOOL_PASSPORT_LIMIT_REACHED', `An agent holds at most ${MAX_ACTIVE_TOOLS} active tool passports: revoke one first`, { max_active_tools: MAX_ACTIVE_TOOLS });
          }
          const r: ToolPassportsTable = {
            tool_id: newId(), agent_id: agentId, name: input.name, description: input.description, public_key_pem: pem, key_version: 1,
            risk_class: input.risk_class, model_provenance_hash: input.model_provenance_hash ?? null, model_provenance_label: input.model_provenance_label ?? null,
            created_at: now, created_log_index: 0, rotated_at: null, rotated_log_index: null, revoked_at: null, revoked_log_index: null,
          };
          const appended = await log.append(trx, {
            kind: 'tool.registered', agentId, epoch: await epochs.current(agentId, trx), at: now,
            data: {
              tool_id: r.tool_id, name: r.name, description: r.description, public_key: pem === null ? null : rawKey(pem), risk_class: r.risk_class,
              model_provenance_hash: r.model_provenance_hash, model_provenance_label: r.model_provenance_label,
            },
          });
          r.created_log_index = appended.index;
          await store.insertTool(trx, r);
          return r;
        });
        return { status: 'success', passport: passportView(row) };
      } catch (e) {
        if (isUniqueViolation(e)) {
          throw new ApiError(409, 'TOOL_PASSPORT_NAME_TAKEN', `You already have an active tool named "${input.name}": rotate or revoke it, or choose another name`, { name: input.name });
        }
        throw e;
      }
    },

    async rotate(agentId: string, toolId: string, publicKey: string) {
      const pem = toolKey(publicKey);
      const now = clock.now();
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const r = await own(agentId, toolId, trx);
        if (r.revoked_at !== null) throw revoked(r);
        if (r.public_key_pem !== null && fingerprint(r.public_key_pem) === fingerprint(pem)) {
          throw new ApiError(422, 'INVALID_TOOL_PUBLIC_KEY', 'public_key is the tool\'s current key: a rotation needs a new key', { field: 'body.public_key' });
        }
        const keyVersion = r.key_version + 1;
        const appended = await log.append(trx, {
          kind: 'tool.rotated', agentId, epoch: await epochs.current(agentId, trx), at: now,
          data: { tool_id: r.tool_id, key_version: keyVersion, public_key: rawKey(pem), previous_public_key_sha256: r.public_key_pem === null ? null : fingerprint(r.public_key_pem) },
        });
        const set = { public_key_pem: pem, key_version: keyVersion, rotated_at: now, rotated_log_index: appended.index };
        await store.rotateTool(trx, r.tool_id, set);
        return { ...r, ...set };
      });
      return { status: 'success', passport: passportView(row) };
    },

    async revoke(agentId: string, toolId: string) {
      const now = clock.now();
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const r = await own(agentId, toolId, trx);
        if (r.revoked_at !== null) throw revoked(r);
        const appended = await log.append(trx, { kind: 'tool.revoked', agentId, epoch: await epochs.current(agentId, trx), at: now, data: { tool_id: r.tool_id } });
        await store.revokeTool(trx, r.tool_id, now, appended.index);
        return { ...r, revoked_at: now, revoked_log_index: appended.index };
      });
      return { status: 'success', passport: passportView(row) };
    },

    async passport(toolId: string) {
      const r = isUuid(toolId) ? await store.findTool(toolId.toLowerCase()) : undefined;
      if (!r) throw new ApiError(404, 'TOOL_PASSPORT_NOT_FOUND', 'No tool passport with this tool_id');
      return { status: 'success', passport: passportView(r) };
    },
  };
}

export type ToolService = ReturnType<typeof createToolService>;
