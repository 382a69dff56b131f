/**
 * Parity of the declarations: the log's consolidation.amended, policy_binding.amended,
 * journal.committed, tool.registered / rotated / revoked and delegation.issued entries replayed into
 * the rows they made, diffed with the stored tables (and a delegated key's api_keys.tools).
 */
import { createPublicKey } from 'node:crypto';
import { canonicalJson } from '../../infra/tlog/jcs';
import type {
  ConsolidationPoliciesTable, DelegationsTable, JournalCommitmentsTable, PolicyBindingsTable, ToolPassportsTable,
} from '../../infra/db/tables/declarations';
import { diffKeyed, type Mismatch, type ReplayEntry, type Replayer, type SnapshotDb } from '../trust/parity';
import type { DeclarationsStore } from './store';

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const pemOf = (raw: unknown) => (typeof raw === 'string'
  ? createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(raw, 'base64')]), format: 'der', type: 'spki' }).export({ format: 'pem', type: 'spki' }).toString()
  : null);
const jcs = (v: unknown) => canonicalJson(v).toString('utf8');
const str = (v: unknown) => (v === null || v === undefined ? null : String(v));


export function declarationsReplayer(store: DeclarationsStore): () => Replayer {
  return () => {
    const policies = new Map<string, ConsolidationPoliciesTable>();
    const currentPolicy = new Map<string, string>();
    const bindings = new Map<string, PolicyBindingsTable>();
    const currentBinding = new Map<string, string>();
    const journal = new Map<string, JournalCommitmentsTable>();
    const tools = new Map<string, ToolPassportsTable>();
    const delegations = new Map<string, DelegationsTable>();
    const agents = new Set<string>();

    return {
      feed(e: ReplayEntry) {
        const d = e.data;
        if (!e.agent_id) return;
        switch (e.kind) {
          case 'consolidation.amended': {
            const key = `${e.agent_id}/${Number(d.version)}`;
            const prev = currentPolicy.get(e.agent_id);
            if (prev) policies.get(prev)!.superseded_at = e.at;
            policies.set(key, {
              agent_id: e.agent_id, version: Number(d.version), template_id: String(d.template_id), params: jcs(d.params),
              declared_at: e.at, log_index: e.index, superseded_at: null,
            });
            currentPolicy.set(e.agent_id, key);
            break;
          }
          case 'policy_binding.amended': {
            const type = String(d.binding_type);
            const key = `${e.agent_id}/${type}/${Number(d.version)}`;
            const prev = currentBinding.get(`${e.agent_id}/${type}`);
            if (prev) bindings.get(prev)!.superseded_at = e.at;
            bindings.set(key, {
              agent_id: e.agent_id, binding_type: type, version: Number(d.version), params: jcs(d.params), bound_at: e.at, log_index: e.index, superseded_at: null,
            });
            currentBinding.set(`${e.agent_id}/${type}`, key);
            break;
          }
          case 'journal.committed': {
            const a = d.commit_attestation as { source?: string; client?: string | null } | null;
            journal.set(String(d.commitment_id), {
              commitment_id: String(d.commitment_id), agent_id: e.agent_id, commitment_hash: String(d.commitment_hash),
              attestation_source: a?.source ?? null, attestation_client: a?.client ?? null, epoch: Number(e.epoch), committed_at: e.at, log_index: e.index,
            });
            break;
          }
          case 'tool.registered':
            tools.set(String(d.tool_id), {
              tool_id: String(d.tool_id), agent_id: e.agent_id, name: String(d.name), description: String(d.description), public_key_pem: pemOf(d.public_key),
              key_version: 1, risk_class: String(d.risk_class), model_provenance_hash: str(d.model_provenance_hash), model_provenance_label: str(d.model_provenance_label),
              created_at: e.at, created_log_index: e.index, rotated_at: null, rotated_log_index: null, revoked_at: null, revoked_log_index: null,
            });
            break;
          case 'tool.rotated': {
            const t = tools.get(String(d.tool_id));
            if (t) Object.assign(t, { public_key_pem: pemOf(d.public_key), key_version: Number(d.key_version), rotated_at: e.at, rotated_log_index: e.index });
            break;
          }
          case 'tool.revoked': {
            const t = tools.get(String(d.tool_id));
            if (t) Object.assign(t, { revoked_at: e.at, revoked_log_index: e.index });
            break;
          }
          case 'delegation.issued':
            delegations.set(String(d.key_id), {
              key_id: String(d.key_id), parent_agent_id: e.agent_id, write_set: JSON.stringify(d.write_set), scopes: JSON.stringify(d.scopes),
              label: str(d.label), expires_at: Date.parse(String(d.expires_at)), created_at: e.at, log_index: e.index,
              binding_log_index: d.binding_log_index === null || d.binding_log_index === undefined ? null : Number(d.binding_log_index),
            });
            break;
          default:
            return;
        }
        agents.add(e.agent_id);
      },

      async diff(_now: number, db: SnapshotDb): Promise<Mismatch[]> {
        const same = <T extends object>(r: T) => ({ ...r }) as Record<string, unknown>;
        const keyTools = await store.delegatedKeyTools(db);
        const builtKeys = new Map([...delegations.values()].map((r) => [r.key_id, {
          key_id: r.key_id, agent_id: r.parent_agent_id, tools: r.write_set, scopes: r.scopes, label: r.label, expires_at: r.expires_at,
        }]));
        return [
          ...diffKeyed('consolidation_policies', policies, await store.allPolicies(db), (r) => `${r.agent_id}/${Number(r.version)}`, same),
          ...diffKeyed('policy_bindings', bindings, await store.allBindings(db), (r) => `${r.agent_id}/${r.binding_type}/${Number(r.version)}`, same),
          ...diffKeyed('journal_commitments', journal, await store.allCommitments(db), (r) => r.commitment_id, same),
          ...diffKeyed('tool_passports', tools, await store.allTools(db), (r) => r.tool_id, same),
          ...diffKeyed('delegations', delegations, await store.allDelegations(db), (r) => r.key_id, same),
          // A delegated key's write_set lives on its api_keys row too (the auth hook reads it there).
          ...diffKeyed('api_keys.tools', builtKeys, keyTools.map((k) => ({ ...k, key_id: String(k.key_id) })), (r) => r.key_id, same),
        ];
      },

      agents: () => agents,
    };
  };
}
