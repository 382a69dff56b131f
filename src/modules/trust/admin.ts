/**
 * Operator views of the trust layer: the decision trace of one agent (each derived fact, the rule
 * that derived it and the log entries it came from) and the adoption counts of each trust feature.
 * Trust modules contribute sections; this file only assembles them.
 */
import { sql, type Kysely } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import { iso, type Clock } from '../../lib/clock';
import { DAY_MS } from '../../lib/utc';
import type { Epochs } from './epochs';

/** One derived fact about an agent: its value, the rule applied and the log entries (indexes) behind it. */
export interface TracedFact { value: unknown; rule: string; log_indexes: number[]; [extra: string]: unknown }
export type TraceSection = (agentId: string, epoch: number, now: number) => Promise<Record<string, TracedFact>>;
export type AdoptionSource = (since: number) => Promise<Record<string, unknown>>;

export function createTrustAdmin(deps: {
  db: Kysely<Database>; epochs: Epochs; clock: Clock;
  agentExists: (agentId: string) => Promise<boolean>;
  sections: TraceSection[];
  adoption: AdoptionSource[];
}) {
  const { db, epochs, clock } = deps;
  return {
    async trace(agentId: string) {
      const id = agentId.toLowerCase();
      if (!(await deps.agentExists(id))) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      const now = clock.now();
      const list = await epochs.list(id);
      const open = list.find((e) => e.closed_at === null);
      const epoch = open?.epoch ?? 1;
      const facts: Record<string, TracedFact> = {
        current_epoch: {
          value: epoch,
          rule: 'epoch 1 opens at registration; a completed custody transfer or recovery closes the open epoch and opens the next',
          log_indexes: list.map((e) => e.open_log_index).filter((i): i is number => i !== null).map(Number),
        },
      };
      for (const section of deps.sections) Object.assign(facts, await section(id, epoch, now));
      const kinds = await db.selectFrom('trust_log_entries').select(['kind', (eb) => eb.fn.countAll<number>().as('n')])
        .where('agent_id', '=', id).groupBy('kind').execute();
      return {
        agent_id: id,
        generated_at: iso(now),
        epochs: list.map((e) => epochs.view(e)),
        facts,
        log_entries_by_kind: Object.fromEntries(kinds.map((k) => [k.kind, Number(k.n)])),
      };
    },

    async adoption() {
      const now = clock.now();
      const since = now - 30 * DAY_MS;
      const [size, byOpen] = await Promise.all([
        db.selectFrom('trust_log_head').select('size').where('id', '=', 1).executeTakeFirstOrThrow(),
        db.selectFrom('agent_epochs').select(['opened_by', sql<number>`count(*)`.as('n')]).groupBy('opened_by').execute(),
      ]);
      const out = {
        generated_at: iso(now),
        window_days: 30,
        trust_log_entries: Number(size.size),
        epochs_opened_by: Object.fromEntries(byOpen.map((r) => [r.opened_by, Number(r.n)])),
      };
      for (const source of deps.adoption) Object.assign(out, await source(since));
      return out as typeof out & Record<string, unknown>;
    },
  };
}

export type TrustAdmin = ReturnType<typeof createTrustAdmin>;
