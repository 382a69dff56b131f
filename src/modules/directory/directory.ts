/**
 * The public directory, GET /v1/agents: listed agents (and the operator's synthetic founding
 * profiles), best reputation first, then oldest, then agent_id; never ordered by payment.
 *
 * Rank rows (directory_ranks) are a projection of the listing (the description route), the reputation
 * score (each rating and dispute decision, in its transaction) and passport revocation, kept in
 * versions: a change closes the agent's current row at a new version and inserts the next one. A walk
 * reads the version that was newest at its first page, and its cursor carries that version with the
 * last row's key, so it never sees an agent twice nor skips one that stayed listed, while others
 * register, list, unlist and get rated. The score decays with time: a refresh (at start and every
 * SVC_DIRECTORY_REFRESH_SECONDS) re-ranks listed agents whose score moved and reconciles the rows with
 * the listed passports. docs/trust.md ("Directory") has the whole design.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Static } from 'typebox';
import type { Database } from '../../infra/db/schema';
import type { DirectoryRanksTable } from '../../infra/db/tables/trust';
import { iso, type Clock } from '../../lib/clock';
import type { DirectoryEntries, DirectoryEntry } from '../identity/directory-entries';
import type { Standing } from '../reputation/service';
import type { Epochs } from '../trust/epochs';
import type { TrustLevelsService } from '../trust/levels';
import { createCursorCodec, type CursorCodec, type Filters } from './cursor';
import type { RankStore } from './rank-store';
import type { DirectoryRow } from './schemas';
import type { SyntheticProfile } from './synthetic';
import type { VouchStore } from './vouch-store';

/** Score resolution of the rank: millionths. */
const MICRO = 1_000_000;
/** The refresh re-ranks an agent when its score moved at least this much (millionths) since its row was written. */
export const RERANK_MIN_DELTA = 100;
/** Rows closed this long before the oldest walk a cursor may continue are still kept (clock skew between instances, slow commits). */
const PRUNE_GRACE_MS = 10 * 60_000;
/** Agents per refresh transaction. */
const REFRESH_CHUNK = 200;
/** Score of an agent with no rated interaction (the Beta(1,1) prior), and of synthetic profiles. */
const PRIOR_SCORE = 0.5;

export interface DirectoryReputation {
  scoresOf(pairs: { agentId: string; epoch: number }[], at: number, trx?: Transaction<Database>): Promise<Map<string, number>>;
  standingsOf(items: { agentId: string; epoch: number; decomposed: boolean }[], at: number): Promise<Map<string, Standing>>;
}

export interface DirectoryDeps {
  db: Kysely<Database>;
  store: RankStore;
  vouches: VouchStore;
  entries: DirectoryEntries;
  epochs: Epochs;
  levels: TrustLevelsService;
  reputation: DirectoryReputation;
  clock: Clock;
  baseUrl: string;
  synthetic: SyntheticProfile[];
  /** SVC_DIRECTORY_CURSOR_SECRET; unset: the key kept in directory_state. */
  cursorSecret?: string;
  cursorTtlMs: number;
}

export interface PageQuery { limit: number; cursor?: string; agent_type?: string; domain?: string; bridge_only?: boolean }

type RankRow = Omit<DirectoryRanksTable, 'valid_from' | 'valid_to' | 'closed_at'>;
type AgentState = Awaited<ReturnType<DirectoryEntries['states']>> extends Map<string, infer S> ? S : never;

const micro = (score: number) => Math.max(0, Math.min(MICRO, Math.round(score * MICRO)));
const orderOf = (score: number) => MICRO - micro(score);
const scoreOf = (order: number) => (MICRO - order) / MICRO;

const same = (a: DirectoryRanksTable, b: RankRow) => Number(a.order_score) === b.order_score && Number(a.created_at) === b.created_at
  && a.agent_name === b.agent_name && a.bio === b.bio && a.skills === b.skills && a.agent_type === b.agent_type && a.domain === b.domain
  && a.agent_card_url === b.agent_card_url && Number(a.bridge) === b.bridge && Number(a.synthetic) === b.synthetic;

function rowOfEntry(e: DirectoryEntry, order: number, scoreAt: number): RankRow {
  return {
    agent_id: e.agentId, order_score: order, created_at: e.createdAt, score_at: scoreAt, agent_name: e.agentName, bio: e.bio,
    skills: JSON.stringify(e.skills), agent_type: e.agentType, domain: e.domain, agent_card_url: e.agentCardUrl,
    bridge: e.agentCardUrl ? 1 : 0, synthetic: 0,
  };
}

function rowOfProfile(p: SyntheticProfile, createdAt: number, scoreAt: number): RankRow {
  return {
    agent_id: p.agentId, order_score: orderOf(PRIOR_SCORE), created_at: createdAt, score_at: scoreAt, agent_name: p.agentName, bio: p.bio,
    skills: JSON.stringify(p.skills), agent_type: p.agentType, domain: p.domain, agent_card_url: p.agentCardUrl,
    bridge: p.agentCardUrl ? 1 : 0, synthetic: 1,
  };
}

export function createDirectory(deps: DirectoryDeps) {
  const { db, store, clock } = deps;
  let codec: CursorCodec | undefined;
  const codecOf = async () => (codec ??= createCursorCodec(deps.cursorSecret ?? (await store.state()).cursor_secret, deps.cursorTtlMs));

  /** One version per transaction, taken on its first change. */
  const versioner = (trx: Transaction<Database>) => {
    let v: Promise<number> | undefined;
    return () => (v ??= store.bump(trx));
  };

  /** Replaces an agent's current row by `next` (none: off the directory); nothing when they are the same. */
  async function apply(trx: Transaction<Database>, version: () => Promise<number>, agentId: string, cur: DirectoryRanksTable | undefined, next: RankRow | undefined, now: number) {
    if (!cur && !next) return false;
    if (cur && next && same(cur, next)) return false;
    const v = await version();
    if (cur) await store.close(trx, agentId, v, now);
    if (next) await store.insert(trx, { ...next, valid_from: v, valid_to: null, closed_at: null });
    return true;
  }

  /** Scores now of listed entries, in `trx`. */
  async function scores(trx: Transaction<Database>, ids: string[], now: number) {
    const opened = await deps.epochs.openOf(ids, trx);
    return deps.reputation.scoresOf(ids.map((id) => ({ agentId: id, epoch: opened.get(id)?.epoch ?? 1 })), now, trx);
  }

  /** A rating or dispute decision changed the agent's score (reputation, in its transaction). */
  async function scoreChanged(trx: Transaction<Database>, agentId: string, score: number, at: number): Promise<void> {
    // Most agents are not listed: one indexed read, no lock.
    if ((await store.current([agentId], trx)).length === 0) return;
    await store.lock(trx);
    const [cur] = await store.current([agentId], trx);
    if (!cur || Number(cur.synthetic) === 1) return;
    await apply(trx, versioner(trx), agentId, cur, { ...cur, order_score: orderOf(score), score_at: at }, clock.now());
  }

  async function hydrate(rows: DirectoryRanksTable[], now: number) {
    const real = rows.filter((r) => Number(r.synthetic) === 0).map((r) => r.agent_id);
    const [states, opened, vouchRows] = real.length === 0
      ? [new Map<string, AgentState>(), new Map<string, { epoch: number; openedAt: number }>(), []]
      : await Promise.all([deps.entries.states(real), deps.epochs.openOf(real), deps.vouches.activeByTarget(real)]);
    // An agent that unlisted, was revoked or suspended since the walk began is left out.
    const live = real.filter((id) => states.get(id)?.listed);
    const epochOf = (id: string) => opened.get(id)?.epoch ?? 1;
    const [levels, standings] = await Promise.all([
      deps.levels.ofMany(live.map((id) => ({ agentId: id, ...(states.get(id) as AgentState) })), opened),
      deps.reputation.standingsOf(live.map((id) => ({ agentId: id, epoch: epochOf(id), decomposed: (states.get(id) as AgentState).decomposed })), now),
    ]);
    const out: Static<typeof DirectoryRow>[] = [];
    for (const r of rows) {
      const base = {
        agent_id: r.agent_id,
        agent_name: r.agent_name,
        synthetic: Number(r.synthetic) === 1,
        bio: r.bio,
        skills: JSON.parse(r.skills) as string[],
        agent_type: r.agent_type,
        domain: r.domain,
        bridge: Number(r.bridge) === 1,
        agent_card_url: r.agent_card_url,
        rank_score: scoreOf(Number(r.order_score)),
        registered_at: iso(Number(r.created_at)),
      };
      if (base.synthetic) {
        out.push({
          ...base, did: null, passport_url: null, a2a_agent_card_url: null,
          trust_summary: { trust_levels: [], custody_epoch: null, vouch_count: 0 },
          reputation_score: null, reputation_status: 'synthetic',
        });
        continue;
      }
      if (!states.get(r.agent_id)?.listed) continue;
      const s = standings.get(r.agent_id);
      const epoch = epochOf(r.agent_id);
      out.push({
        ...base,
        did: `did:svc:${r.agent_id}`,
        passport_url: `${deps.baseUrl}/v1/agents/${r.agent_id}/passport`,
        a2a_agent_card_url: `${deps.baseUrl}/v1/agents/${r.agent_id}/agent-card`,
        trust_summary: {
          trust_levels: levels.get(r.agent_id) ?? ['floor'],
          custody_epoch: epoch,
          vouch_count: vouchRows.filter((v) => v.target === r.agent_id && v.epoch === epoch).reduce((n, v) => n + v.count, 0),
        },
        reputation_score: s?.score ?? PRIOR_SCORE,
        reputation_status: s?.status ?? 'insufficient_data',
        ...(s?.sub_signals ? { reputation_sub_signals: s.sub_signals } : {}),
      });
    }
    return out;
  }

  return {
    /** GET /v1/agents: one page of the walk the cursor continues (a new walk without one). */
    async page(q: PageQuery) {
      const now = clock.now();
      const filters: Filters = [q.agent_type ?? null, q.domain ?? null, q.bridge_only ? 1 : 0];
      const c = await codecOf();
      const walk = q.cursor !== undefined ? c.decode(q.cursor, filters, now) : undefined;
      const version = walk?.version ?? await store.version();
      const walkStart = walk?.walkStart ?? now;
      const rows = await store.page(version, filters, walk?.after, q.limit + 1);
      const shown = rows.slice(0, q.limit);
      const last = shown[shown.length - 1];
      const more = rows.length > q.limit && last !== undefined;
      return {
        agents: await hydrate(shown, now),
        next_cursor: more
          ? c.encode({ version, walkStart, filters, after: { order: Number(last.order_score), created: Number(last.created_at), id: last.agent_id } })
          : null,
        limit: q.limit,
        directory_version: version,
        walk_started_at: iso(walkStart),
        cursor_expires_at: iso(walkStart + deps.cursorTtlMs),
      };
    },

    /** The description changed (identity, in its transaction): the agent's row follows its listing and description. */
    async described(trx: Transaction<Database>, agentId: string): Promise<void> {
      const now = clock.now();
      await store.lock(trx);
      const [entry, cur] = await Promise.all([deps.entries.entries([agentId], trx), store.current([agentId], trx)]).then(([m, c]) => [m.get(agentId), c[0]] as const);
      let next: RankRow | undefined;
      if (entry?.listed) {
        // A listed agent keeps its rank; a newly listed one is ranked by its score now.
        const order = cur ? Number(cur.order_score) : orderOf((await scores(trx, [agentId], now)).get(agentId) ?? PRIOR_SCORE);
        next = rowOfEntry(entry, order, cur ? Number(cur.score_at) : now);
      }
      await apply(trx, versioner(trx), agentId, cur, next, now);
    },

    /** A rating or dispute decision changed the agent's score (reputation, in its transaction). */
    scoreChanged,

    /** A custody transfer or recovery opened a new epoch (in its transaction): reputation starts again from the prior, and so does the rank. */
    async epochRolled(trx: Transaction<Database>, agentId: string, at: number): Promise<void> {
      await scoreChanged(trx, agentId, PRIOR_SCORE, at);
    },

    /** The passport was revoked (in its transaction): off the directory. */
    async revoked(trx: Transaction<Database>, agentId: string): Promise<void> {
      if ((await store.current([agentId], trx)).length === 0) return;
      await store.lock(trx);
      const [cur] = await store.current([agentId], trx);
      await apply(trx, versioner(trx), agentId, cur, undefined, clock.now());
    },

    /**
     * Re-ranks listed agents whose score moved by RERANK_MIN_DELTA or more (reputation decays with
     * time), and reconciles rows with the listed passports (agents listed before the directory
     * existed, anything a hook could not see). Then deletes rows no walk can read any more.
     */
    async refresh(): Promise<{ checked: number; changed: number; pruned: number }> {
      const ids = new Set<string>();
      for (let after: string | undefined; ;) {
        const page = await deps.entries.listedIds(after, 1000);
        page.forEach((id) => ids.add(id));
        if (page.length < 1000) break;
        after = page[page.length - 1];
      }
      for (let after: string | undefined; ;) {
        const page = await store.currentAgentIds(after, 1000);
        page.forEach((id) => ids.add(id));
        if (page.length < 1000) break;
        after = page[page.length - 1];
      }
      const all = [...ids];
      let changed = 0;
      for (let i = 0; i < all.length; i += REFRESH_CHUNK) {
        const chunk = all.slice(i, i + REFRESH_CHUNK);
        changed += await db.transaction().execute(async (trx) => {
          const now = clock.now();
          await store.lock(trx);
          const entries = await deps.entries.entries(chunk, trx);
          const current = new Map((await store.current(chunk, trx)).map((r) => [r.agent_id, r]));
          const listed = chunk.filter((id) => entries.get(id)?.listed);
          const scoresNow = await scores(trx, listed, now);
          const version = versioner(trx);
          let n = 0;
          for (const id of chunk) {
            const e = entries.get(id);
            const cur = current.get(id);
            let next: RankRow | undefined;
            if (e?.listed) {
              const order = orderOf(scoresNow.get(id) ?? PRIOR_SCORE);
              const keep = cur && Math.abs(Number(cur.order_score) - order) < RERANK_MIN_DELTA;
              next = rowOfEntry(e, keep ? Number(cur.order_score) : order, keep ? Number(cur.score_at) : now);
            }
            if (await apply(trx, version, id, cur, next, now)) n++;
          }
          return n;
        });
      }
      const now = clock.now();
      await store.markRefreshed(now);
      const pruned = await store.prune(now - deps.cursorTtlMs - PRUNE_GRACE_MS);
      return { checked: all.length, changed, pruned };
    },

    /** Writes the configured synthetic profiles (and takes off those no longer configured). */
    async syncSynthetic(): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const now = clock.now();
        await store.lock(trx);
        const current = new Map((await store.currentSynthetic(trx)).map((r) => [r.agent_id, r]));
        const version = versioner(trx);
        let n = 0;
        for (const p of deps.synthetic) {
          const cur = current.get(p.agentId);
          current.delete(p.agentId);
          const next = rowOfProfile(p, p.createdAt ?? (cur ? Number(cur.created_at) : now), cur ? Number(cur.score_at) : now);
          if (await apply(trx, version, p.agentId, cur, next, now)) n++;
        }
        for (const [id, cur] of current) if (await apply(trx, version, id, cur, undefined, now)) n++;
        return n;
      });
    },

    /** Synthetic profiles now in the directory (the community statistics count them apart). */
    syntheticCount: () => store.countCurrent(1),
  };
}

export type Directory = ReturnType<typeof createDirectory>;
