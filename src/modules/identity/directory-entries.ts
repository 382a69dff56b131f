/**
 * What the directory reads of identity: an agent's description as the directory shows it, and
 * which agents are listed. SQL of identity's tables; the directory module gets it through app.ts.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';

export interface DirectoryEntry {
  agentId: string;
  agentName: string;
  createdAt: number;
  status: string;
  frozen: number;
  /** Shown in the directory: listed, passport not revoked, agent active. */
  listed: boolean;
  bio: string | null;
  skills: string[];
  agentType: string | null;
  domain: string | null;
  /** The external agent card the agent declared at registration (bridge agents). */
  agentCardUrl: string | null;
  /** reputation_sub_signal_visibility is `decomposed`. */
  decomposed: boolean;
}

export function createDirectoryEntries(db: Kysely<Database>) {
  return {
    /** Entries of these agents (an unknown id is absent); in `trx` when given. */
    async entries(agentIds: string[], trx: Kysely<Database> | Transaction<Database> = db): Promise<Map<string, DirectoryEntry>> {
      const out = new Map<string, DirectoryEntry>();
      for (let i = 0; i < agentIds.length; i += 500) {
        const rows = await trx.selectFrom('agents as a').innerJoin('passports as p', 'p.agent_id', 'a.agent_id')
          .select([
            'a.agent_id', 'a.agent_name', 'a.created_at', 'a.status', 'a.frozen', 'a.agent_card_url',
            'p.listed', 'p.revoked_at', 'p.bio', 'p.skills', 'p.agent_type', 'p.domain', 'p.sub_signal_visibility',
          ])
          .where('a.agent_id', 'in', agentIds.slice(i, i + 500)).execute();
        for (const r of rows) {
          out.set(r.agent_id, {
            agentId: r.agent_id, agentName: r.agent_name, createdAt: Number(r.created_at), status: r.status, frozen: Number(r.frozen),
            listed: Number(r.listed) === 1 && r.revoked_at === null && r.status === 'active',
            bio: r.bio, skills: JSON.parse(r.skills) as string[], agentType: r.agent_type, domain: r.domain,
            agentCardUrl: r.agent_card_url, decomposed: r.sub_signal_visibility === 'decomposed',
          });
        }
      }
      return out;
    },

    /** What a directory page needs to know now of these agents: still listed, status and frozen (levels), sub-signal visibility. */
    async states(agentIds: string[]): Promise<Map<string, { listed: boolean; status: string; frozen: number; createdAt: number; decomposed: boolean }>> {
      const rows = await db.selectFrom('agents as a').innerJoin('passports as p', 'p.agent_id', 'a.agent_id')
        .select(['a.agent_id', 'a.status', 'a.frozen', 'a.created_at', 'p.listed', 'p.revoked_at', 'p.sub_signal_visibility'])
        .where('a.agent_id', 'in', agentIds).execute();
      return new Map(rows.map((r) => [r.agent_id, {
        listed: Number(r.listed) === 1 && r.revoked_at === null && r.status === 'active', status: r.status, frozen: Number(r.frozen),
        createdAt: Number(r.created_at), decomposed: r.sub_signal_visibility === 'decomposed',
      }]));
    },

    /** Ids of agents whose passport says listed, in id order after `after` (the directory's refresh pages through them). */
    async listedIds(after: string | undefined, limit: number): Promise<string[]> {
      let q = db.selectFrom('passports').select('agent_id').where('listed', '=', 1);
      if (after !== undefined) q = q.where('agent_id', '>', after);
      return (await q.orderBy('agent_id').limit(limit).execute()).map((r) => r.agent_id);
    },
  };
}

export type DirectoryEntries = ReturnType<typeof createDirectoryEntries>;
