/**
 * Consolidation policy and policy bindings: declarations an agent amends with its passport key
 * (challenge + signature, schemes svc.consolidation.amend.v1 and svc.policy_binding.amend.v1). Each
 * amend is a trust log entry carrying the declaration and the proof (scheme, challenge id, nonce,
 * key fingerprint, signature), so anyone can check the holder signed it; the tables are projections.
 * svc records a consolidation policy only: it runs no consolidation engine.
 */
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import type { ConsolidationPoliciesTable, PolicyBindingsTable } from '../../infra/db/tables/declarations';
import { canonicalJson } from '../../infra/tlog/jcs';
import { iso, type Clock } from '../../lib/clock';
import { sha256hex } from '../../lib/hash';
import { isUuid } from '../../lib/ids';
import { CONSOLIDATION_AMEND_SCHEME, POLICY_BINDING_AMEND_SCHEME } from '../../lib/signing';
import type { PassportSignatureVerifier, VerifiedSignature } from '../identity/signatures';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import { CONSOLIDATION_TEMPLATE_ID, consolidationParamsProblems } from './consolidation-params';
import type { ConsolidationPolicyView } from './schemas';
import type { DeclarationsStore } from './store';

export const TOOL_ALLOW_LIST = 'tool_allow_list';
export const BINDING_TYPES = [TOOL_ALLOW_LIST] as const;
/** The spec's limit on a tool allow list. */
export const MAX_ALLOWED_TOOLS = 32;
/** A tool name in an allow list or a write_set: svc's own (svc_memory) or any other tool's. */
export const TOOL_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$';
const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);

export const CONSOLIDATION_NOTICE = 'Recorded only: svc runs no consolidation engine. The policy states what the agent declares; nothing in svc applies it.';

/** What the declarations need to know of an agent (from identity). */
export interface DeclarantProfile { agentId: string; frozen: boolean }

/**
 * A custody restriction that forbids amending declarations (an open recovery intent, staged
 * resurrection): the custody module supplies it; undefined when none applies.
 */
export type CustodyRestriction = (agentId: string) => Promise<string | undefined>;

export interface AmendInput {
  template_id?: unknown;
  binding_type?: unknown;
  params?: unknown;
  challenge_id?: string;
  passport_signature?: string;
}

const proofOf = (scheme: string, v: VerifiedSignature) => ({
  scheme, challenge_id: v.challengeId, nonce: v.nonce, public_key_sha256: v.publicKeySha256, signature: v.signature,
});

export function createPolicyService(deps: {
  db: Kysely<Database>; store: DeclarationsStore; log: TrustLog; epochs: Epochs; clock: Clock;
  verify: PassportSignatureVerifier;
  profile: (agentId: string) => Promise<DeclarantProfile | undefined>;
}) {
  const { db, store, log, epochs, clock } = deps;
  let restriction: CustodyRestriction | undefined;

  async function agentOrNotFound(agentId: string): Promise<string> {
    const id = isUuid(agentId) ? agentId.toLowerCase() : undefined;
    if (!id || !(await deps.profile(id))) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
    return id;
  }

  /** Why this agent may not amend its declarations now, or undefined. */
  async function forbiddenReason(agentId: string): Promise<string | undefined> {
    const p = await deps.profile(agentId);
    if (p?.frozen) return 'frozen';
    return restriction ? restriction(agentId) : undefined;
  }

  const policyView = (r: ConsolidationPoliciesTable) => {
    const declaredAt = iso(Number(r.declared_at));
    return {
      agent_id: r.agent_id,
      template_id: r.template_id,
      // The stored params passed consolidation-v1's check when declared.
      params: { ...(JSON.parse(r.params) as Record<string, unknown>), declared_at: declaredAt } as Static<typeof ConsolidationPolicyView>['params'],
      version: r.version,
      declared_at: declaredAt,
      log_index: Number(r.log_index),
      recorded_only: true,
      notice: CONSOLIDATION_NOTICE,
    };
  };

  const bindingView = (r: PolicyBindingsTable) => ({
    binding_type: r.binding_type,
    // tool_allow_list, the one binding type: {allowed_tools}.
    params: JSON.parse(r.params) as { allowed_tools: string[] },
    params_sha256: sha256hex(r.params),
    version: r.version,
    bound_at: iso(Number(r.bound_at)),
    log_index: Number(r.log_index),
  });

  /**
   * The binding as its log entry recorded it, or POLICY_BINDING_CORRUPT: a stored binding whose
   * canonical hash differs from the hash its entry recorded (changed behind svc's back).
   */
  async function intact(r: PolicyBindingsTable, q?: Parameters<DeclarationsStore['logEntry']>[1]): Promise<PolicyBindingsTable> {
    const at = Number(r.log_index);
    const entry = await store.logEntry(at, q) as { kind?: string; agent_id?: string; data?: { binding_type?: string; params_sha256?: string } } | undefined;
    let stored: string;
    try {
      stored = sha256hex(canonicalJson(JSON.parse(r.params)));
    } catch {
      stored = 'unreadable';
    }
    const recorded = entry?.kind === 'policy_binding.amended' && entry.agent_id === r.agent_id && entry.data?.binding_type === r.binding_type
      ? entry.data.params_sha256 : undefined;
    if (recorded !== stored) {
      throw new ApiError(409, 'POLICY_BINDING_CORRUPT',
        `The stored ${r.binding_type} binding does not match the hash its trust log entry (index ${at}) recorded; it is not used until the agent amends it again`,
        { binding_type: r.binding_type, log_index: at, recorded_params_sha256: recorded ?? null, stored_params_sha256: stored });
    }
    return r;
  }

  return {
    /** The custody module's restriction check (built after this one). */
    useCustodyRestriction(check: CustodyRestriction) {
      restriction = check;
    },

    // ---- consolidation policy ----

    async policy(agentId: string, isPublic: boolean) {
      const id = isPublic ? await agentOrNotFound(agentId) : agentId;
      const r = await store.currentPolicy(id);
      if (!r) throw new ApiError(404, 'CONSOLIDATION_POLICY_NOT_FOUND', 'This agent has declared no consolidation policy (POST /v1/me/consolidation-policy/amend declares one)', { agent_id: id });
      return { status: 'success', policy: policyView(r) };
    },

    async amendPolicy(agentId: string, input: AmendInput) {
      if (input.template_id !== CONSOLIDATION_TEMPLATE_ID) {
        throw new ApiError(422, 'CONSOLIDATION_POLICY_TEMPLATE_INVALID', `template_id must be "${CONSOLIDATION_TEMPLATE_ID}"`, { template_ids: [CONSOLIDATION_TEMPLATE_ID] });
      }
      const problems = consolidationParamsProblems(input.params);
      if (problems.length > 0) {
        throw new ApiError(422, 'CONSOLIDATION_POLICY_PARAMS_INVALID',
          `params do not follow ${CONSOLIDATION_TEMPLATE_ID}: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, { problems });
      }
      const reason = await forbiddenReason(agentId);
      if (reason) {
        throw new ApiError(403, 'CONSOLIDATION_POLICY_AMEND_FORBIDDEN', `The consolidation policy cannot be amended now (${reason})`, { reason });
      }
      const params = input.params as Record<string, unknown>;
      const proof = await deps.verify({
        agentId, scheme: CONSOLIDATION_AMEND_SCHEME, challengeId: input.challenge_id, signature: input.passport_signature,
        content: { template_id: CONSOLIDATION_TEMPLATE_ID, params },
      });
      const now = clock.now();
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const previous = await store.currentPolicy(agentId, trx);
        const version = (previous?.version ?? 0) + 1;
        const appended = await log.append(trx, {
          kind: 'consolidation.amended', agentId, epoch: await epochs.current(agentId, trx), at: now,
          data: { template_id: CONSOLIDATION_TEMPLATE_ID, version, params, proof: proofOf(CONSOLIDATION_AMEND_SCHEME, proof) },
        });
        const r: ConsolidationPoliciesTable = {
          agent_id: agentId, version, template_id: CONSOLIDATION_TEMPLATE_ID, params: canonicalJson(params).toString('utf8'),
          declared_at: now, log_index: appended.index, superseded_at: null,
        };
        await store.declarePolicy(trx, r);
        return r;
      });
      return { status: 'success', policy: policyView(row) };
    },

    // ---- policy bindings ----

    async bindings(agentId: string, isPublic: boolean, bindingType?: string) {
      const id = isPublic ? await agentOrNotFound(agentId) : agentId;
      if (bindingType !== undefined && !(BINDING_TYPES as readonly string[]).includes(bindingType)) {
        throw new ApiError(422, 'POLICY_BINDING_TYPE_INVALID', `binding_type must be one of: ${BINDING_TYPES.join(', ')}`, { binding_types: [...BINDING_TYPES] });
      }
      const rows = (await store.currentBindings(id)).filter((r) => bindingType === undefined || r.binding_type === bindingType);
      if (bindingType !== undefined && rows.length === 0) {
        throw new ApiError(404, 'POLICY_BINDING_NOT_FOUND', `This agent has no ${bindingType} binding`, { agent_id: id, binding_type: bindingType });
      }
      for (const r of rows) await intact(r);
      return { status: 'success', agent_id: id, bindings: rows.map(bindingView) };
    },

    async amendBinding(agentId: string, input: AmendInput) {
      if (typeof input.binding_type !== 'string' || !(BINDING_TYPES as readonly string[]).includes(input.binding_type)) {
        throw new ApiError(422, 'POLICY_BINDING_TYPE_INVALID', `binding_type must be one of: ${BINDING_TYPES.join(', ')}`, { binding_types: [...BINDING_TYPES] });
      }
      const problem = allowListProblem(input.params);
      if (problem) throw new ApiError(422, 'POLICY_BINDING_PARAMS_INVALID', `params: ${problem}`);
      const reason = await forbiddenReason(agentId);
      if (reason) throw new ApiError(403, 'POLICY_BINDING_AMEND_FORBIDDEN', `The policy bindings cannot be amended now (${reason})`, { reason });
      const bindingType = input.binding_type;
      const params = input.params as { allowed_tools: string[] };
      const proof = await deps.verify({
        agentId, scheme: POLICY_BINDING_AMEND_SCHEME, challengeId: input.challenge_id, signature: input.passport_signature,
        content: { binding_type: bindingType, params },
      });
      const now = clock.now();
      const canonical = canonicalJson(params).toString('utf8');
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const previous = await store.currentBinding(agentId, bindingType, trx);
        const version = (previous?.version ?? 0) + 1;
        const appended = await log.append(trx, {
          kind: 'policy_binding.amended', agentId, epoch: await epochs.current(agentId, trx), at: now,
          data: { binding_type: bindingType, version, params, params_sha256: sha256hex(canonical), proof: proofOf(POLICY_BINDING_AMEND_SCHEME, proof) },
        });
        const r: PolicyBindingsTable = { agent_id: agentId, binding_type: bindingType, version, params: canonical, bound_at: now, log_index: appended.index, superseded_at: null };
        await store.bind(trx, r);
        return r;
      });
      return { status: 'success', binding: bindingView(row) };
    },

    /**
     * The agent's active tool allow list, checked against its log entry, read in `trx` (delegation
     * reads it under the log's append lock, so an amend cannot slip between the check and the key).
     */
    async allowList(agentId: string, trx: Parameters<DeclarationsStore['currentBinding']>[2]) {
      const r = await store.currentBinding(agentId, TOOL_ALLOW_LIST, trx);
      if (!r) return undefined;
      await intact(r, trx);
      return { allowedTools: (JSON.parse(r.params) as { allowed_tools: string[] }).allowed_tools, logIndex: Number(r.log_index) };
    },
  };
}

/** Why `params` is not a tool allow list ({allowed_tools: up to 32 distinct tool names}), or undefined. */
export function allowListProblem(params: unknown): string | undefined {
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return 'must be an object {allowed_tools: [...]}';
  const extra = Object.keys(params).filter((k) => k !== 'allowed_tools');
  if (extra.length > 0) return `has fields a tool_allow_list does not define: ${extra.join(', ')}`;
  const tools = (params as { allowed_tools?: unknown }).allowed_tools;
  if (!Array.isArray(tools)) return 'allowed_tools is required: an array of tool names';
  if (tools.length > MAX_ALLOWED_TOOLS) return `allowed_tools holds ${tools.length} names; at most ${MAX_ALLOWED_TOOLS}`;
  const bad = tools.findIndex((t) => typeof t !== 'string' || !TOOL_NAME.test(t));
  if (bad >= 0) return `allowed_tools[${bad}] is not a tool name (1 to 64 letters, digits, _ . : -, starting with a letter or digit)`;
  if (new Set(tools).size !== tools.length) return 'allowed_tools names a tool twice';
  return undefined;
}

export type PolicyService = ReturnType<typeof createPolicyService>;
