/**
 * Sponsorship rings: a cycle of sponsorships (A sponsors B, B sponsors A; or longer) lends standing
 * to no one, so every sponsorship on one is flagged and confers nothing. Checked when a sponsorship
 * is created, under the trust log's append lock (so two creations that close a ring together are
 * seen one after the other).
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { SponsorshipsTable } from '../../infra/db/tables/stake';
import type { StakeStore } from './store';

/** The search stops past this many agents (the part of the graph read for one check). */
const MAX_AGENTS = 10_000;

/** Agents reachable from `start` along sponsorships in force (`out`: sponsor to ward; `in`: back), with the edges walked. */
async function reach(store: StakeStore, trx: Transaction<Database>, start: string, direction: 'out' | 'in', now: number) {
  const nodes = new Set([start]);
  const edges: SponsorshipsTable[] = [];
  let frontier = [start];
  while (frontier.length > 0 && nodes.size < MAX_AGENTS) {
    const step = await store.edges(frontier, direction, now, trx);
    frontier = [];
    for (const e of step) {
      edges.push(e);
      const next = direction === 'out' ? e.ward_agent_id : e.sponsor_agent_id;
      if (!nodes.has(next)) {
        nodes.add(next);
        frontier.push(next);
      }
    }
  }
  return { nodes, edges };
}

/**
 * The sponsorships in force that lie on a cycle through `agent`: the edges inside its strongly
 * connected part of the sponsorship graph (every such edge is on some cycle). Empty: no ring.
 */
export async function ringThrough(store: StakeStore, trx: Transaction<Database>, agent: string, now: number): Promise<SponsorshipsTable[]> {
  const forward = await reach(store, trx, agent, 'out', now);
  const backward = await reach(store, trx, agent, 'in', now);
  const part = new Set([...forward.nodes].filter((a) => backward.nodes.has(a)));
  if (part.size < 2) return [];
  const seen = new Set<string>();
  return forward.edges.filter((e) => part.has(e.sponsor_agent_id) && part.has(e.ward_agent_id) && !seen.has(e.sponsorship_id) && seen.add(e.sponsorship_id));
}
