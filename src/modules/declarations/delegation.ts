/**
 * Delegation: POST /v1/agents/{parent_agent_id}/delegate (the bearer is the parent) issues a scoped
 * sub-key for a write_set of svc tool names. The key holds the capability scopes the write_set's
 * routes need, and its use is limited to the write_set's tools (the auth hook refuses any route of
 * another tool; the MCP endpoint refuses a call of another tool). When the parent has an active
 * tool_allow_list binding, a write_set outside allowed_tools is POLICY_BINDING_WRITE_SET_EXCEEDED;
 * the binding is read under the trust log's append lock in the key's transaction, so an amend cannot
 * slip between the check and the key. The delegation is a trust log entry (delegation.issued) beside
 * the key's own key.created entry.
 */
import type { Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { isCapability, type Capability } from '../../lib/capabilities';
import { iso, type Clock } from '../../lib/clock';
import { isUuid } from '../../lib/ids';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import type { PolicyService } from './policies';
import type { DeclarationsStore } from './store';

/** Default lifetime of a delegated key (seconds), and the bounds of expires_in (as for scoped keys). */
export const DELEGATION_DEFAULT_EXPIRES_IN = 86_400;
export const DELEGATION_EXPIRES_MIN = 60;
export const DELEGATION_EXPIRES_MAX = 31_536_000;
export const DELEGATION_LABEL_MAX = 100;
/** Tools one write_set may name (the allow list's bound). */
export const WRITE_SET_MAX = 32;

/** What a delegable svc tool's routes need of a scoped key. */
export interface DelegableTool { name: string; scopes: Capability[] }

/** The svc tools a scoped key can use (from the live tool definitions): a tool none of whose actions a scoped key may call is absent. */
export function delegableTools(defs: { name: string; available: boolean; actions: { route?: { auth: string; scope?: string } }[] }[]): Map<string, DelegableTool> {
  const out = new Map<string, DelegableTool>();
  for (const d of defs) {
    if (!d.available) continue;
    const usable = d.actions.filter((a) => a.route && (a.route.auth === 'key' || a.route.auth === 'optional') && (a.route.scope !== undefined || a.route.auth === 'optional'));
    if (usable.length === 0) continue;
    const scopes = [...new Set(usable.map((a) => a.route!.scope).filter((s): s is Capability => s !== undefined && isCapability(s)))].sort();
    out.set(d.name, { name: d.name, scopes });
  }
  return out;
}

/** The key identity issues for a delegation; `also` runs in the key's transaction (its key.created entry is appended before it). */
export type DelegatedKeyIssuer = (
  parentAgentId: string,
  input: { scopes: string[]; tools: string[]; label: string | null; expiresIn: number },
  also: (trx: Transaction<Database>, key: { keyId: string; createdAt: number; expiresAt: number }) => Promise<void>,
) => Promise<{ api_key: string; key_id: string; scopes: string[]; label: string | null; created_at: string; expires_at: string | null }>;

export interface DelegateInput { write_set?: unknown; label?: string; expires_in?: number }

export function createDelegationService(deps: {
  store: DeclarationsStore; log: TrustLog; epochs: Epochs; clock: Clock; policies: PolicyService;
  tools: () => Map<string, DelegableTool>;
  issueKey: () => DelegatedKeyIssuer;
}) {
  const { store, log, epochs, policies } = deps;

  function writeSetOf(value: unknown): string[] {
    const tools = deps.tools();
    const invalid = (why: string) => new ApiError(422, 'DELEGATION_WRITE_SET_INVALID', `write_set ${why}`, { delegable_tools: [...tools.keys()] });
    if (!Array.isArray(value) || value.length === 0) throw invalid('is required: a non-empty array of svc tool names (e.g. ["svc_memory"])');
    if (value.length > WRITE_SET_MAX) throw invalid(`names ${value.length} tools; at most ${WRITE_SET_MAX}`);
    if (value.some((t) => typeof t !== 'string')) throw invalid('must hold tool names (strings)');
    const names = value as string[];
    if (new Set(names).size !== names.length) throw invalid('names a tool twice');
    const unknown = names.filter((t) => !tools.has(t));
    if (unknown.length > 0) throw invalid(`names tools a delegated key cannot use on this instance: ${unknown.join(', ')}`);
    return names;
  }

  return {
    async delegate(bearerAgentId: string, parentAgentId: string, input: DelegateInput) {
      if (!isUuid(parentAgentId) || parentAgentId.toLowerCase() !== bearerAgentId) {
        throw new ApiError(403, 'DELEGATION_FORBIDDEN', 'Only the parent agent itself delegates: the path\'s parent_agent_id must be the bearer\'s own agent id', { parent_agent_id: parentAgentId });
      }
      const writeSet = writeSetOf(input.write_set);
      const available = deps.tools();
      const scopes = [...new Set(writeSet.flatMap((t) => available.get(t)!.scopes))].sort();
      const label = input.label === undefined || input.label.trim() === '' ? null : input.label;
      const expiresIn = input.expires_in ?? DELEGATION_DEFAULT_EXPIRES_IN;
      const issue = deps.issueKey();
      let bindingLogIndex: number | null = null;
      let logIndex = 0;
      const key = await issue(bearerAgentId, { scopes, tools: writeSet, label, expiresIn }, async (trx, k) => {
        // Under the log's append lock (key.created took it): the binding an amend would change is read after that amend committed.
        await log.lockHeadFor(trx);
        const allow = await policies.allowList(bearerAgentId, trx);
        if (allow) {
          const exceeded = writeSet.filter((t) => !allow.allowedTools.includes(t));
          if (exceeded.length > 0) {
            throw new ApiError(403, 'POLICY_BINDING_WRITE_SET_EXCEEDED',
              `The write_set names tools outside your tool_allow_list binding: ${exceeded.join(', ')}`,
              { exceeded, allowed_tools: allow.allowedTools, binding_log_index: allow.logIndex });
          }
          bindingLogIndex = allow.logIndex;
        }
        const appended = await log.append(trx, {
          kind: 'delegation.issued', agentId: bearerAgentId, epoch: await epochs.current(bearerAgentId, trx), at: k.createdAt,
          data: { key_id: k.keyId, write_set: writeSet, scopes, label, expires_at: iso(k.expiresAt), binding_log_index: bindingLogIndex },
        });
        logIndex = appended.index;
        await store.insertDelegation(trx, {
          key_id: k.keyId, parent_agent_id: bearerAgentId, write_set: JSON.stringify(writeSet), scopes: JSON.stringify(scopes), label,
          expires_at: k.expiresAt, created_at: k.createdAt, log_index: appended.index, binding_log_index: bindingLogIndex,
        });
      });
      return {
        status: 'success',
        ...key,
        kind: 'scoped',
        parent_agent_id: bearerAgentId,
        write_set: writeSet,
        delegation_log_index: logIndex,
        policy_binding_log_index: bindingLogIndex,
      };
    },
  };
}

export type DelegationService = ReturnType<typeof createDelegationService>;
