/**
 * Trust levels: one function, derived only (never set by the holder). Every place that shows or
 * uses a level reads it: GET /v1/me, the public passport and the agent card (identity), the rater
 * weight of a rating (reputation) and the dynamic-browse probation (browse).
 *
 *   floor        every agent
 *   ephemeral    the request is made with an ephemeral passport's session
 *   staked       an active stake that is not in its unstake cooling
 *   sponsored    an active sponsorship that is not ring-flagged
 *   established  active, not frozen, and at least 30 days into the current custody epoch
 *
 * Stakes and sponsorships are read through `StandingReader` (the stake module's projection); until
 * it is installed every agent answers false for both.
 */
import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { prepared } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import type { Clock } from '../../lib/clock';
import { DAY_MS } from '../../lib/utc';

export const TRUST_LEVELS = ['floor', 'ephemeral', 'staked', 'sponsored', 'established'] as const;
export type TrustLevel = (typeof TRUST_LEVELS)[number];

/** Days in the current custody epoch after which an active, unfrozen agent is `established`. */
export const ESTABLISHED_AFTER_DAYS = 30;

/** Levels that stand for an identity with something at stake or time behind it: full rater weight, no browse probation. */
export const ELEVATED_LEVELS: readonly TrustLevel[] = ['staked', 'sponsored', 'established'];

export const TRUST_LEVEL_RULES: Record<TrustLevel, string> = {
  floor: 'every agent',
  ephemeral: "the request is made with an ephemeral passport's session",
  staked: 'an active stake not in its unstake cooling',
  sponsored: 'an active sponsorship that is not ring-flagged',
  established: `active, not frozen, and at least ${ESTABLISHED_AFTER_DAYS} days in the current custody epoch`,
};

/** One line for traces and documents. */
export const TRUST_LEVEL_RULE = TRUST_LEVELS.map((l) => `${l}: ${TRUST_LEVEL_RULES[l]}`).join('; ');

/** The stake module's projection of an agent (false for both until it exists). */
export interface TrustStanding { stakedActive: boolean; sponsoredActive: boolean }
export type StandingReader = (agentId: string) => Promise<TrustStanding>;
/** The same for many agents at once (a directory page); an agent absent from the map has neither. */
export type StandingsReader = (agentIds: string[]) => Promise<Map<string, TrustStanding>>;
export const NO_STANDING: StandingReader = async () => ({ stakedActive: false, sponsoredActive: false });

/** Everything the levels depend on. */
export interface TrustLevelFacts {
  /** Account status is active (not suspended). */
  active: boolean;
  frozen: boolean;
  /** When the agent's current custody epoch opened. */
  epochOpenedAt: number;
  /** The request is made with an ephemeral passport's session. */
  ephemeralSession: boolean;
  standing: TrustStanding;
}

/** The one rule. Levels come in TRUST_LEVELS order. */
export function trustLevels(f: TrustLevelFacts, now: number): TrustLevel[] {
  const has: Record<TrustLevel, boolean> = {
    floor: true,
    ephemeral: f.ephemeralSession,
    staked: f.standing.stakedActive,
    sponsored: f.standing.sponsoredActive,
    established: f.active && !f.frozen && now - f.epochOpenedAt >= ESTABLISHED_AFTER_DAYS * DAY_MS,
  };
  return TRUST_LEVELS.filter((l) => has[l]);
}

export const isElevated = (levels: readonly string[]): boolean => levels.some((l) => (ELEVATED_LEVELS as readonly string[]).includes(l));

/** What a caller knows of the agent (identity's record). */
export interface LevelSubject {
  agentId: string;
  status: string;
  frozen: number | boolean;
  /** Registration time: the epoch's opening when the agent has no epoch row yet. */
  createdAt: number;
}

export type TrustLevelsOf = (agent: LevelSubject, opts?: { ephemeral?: boolean }) => Promise<TrustLevel[]>;

/** Reads the facts (open epoch, standing) and applies the rule. */
export function createTrustLevels(deps: { db: Kysely<Database>; sqlite?: SQLite.Database; clock: Clock }) {
  let standing: StandingReader = NO_STANDING;
  let standings: StandingsReader | undefined;
  // Read on every level check (GET /v1/me, passports): compiled once.
  const openEpochQ = prepared(deps.db, { agent: '\u0000agent' }, (s) => deps.db.selectFrom('agent_epochs').select('opened_at')
    .where('agent_id', '=', s.agent).where('closed_at', 'is', null).orderBy('epoch', 'desc').limit(1), deps.sqlite);
  const of: TrustLevelsOf = async (agent, opts = {}) => {
    const [[epoch], s] = await Promise.all([openEpochQ({ agent: agent.agentId }), standing(agent.agentId)]);
    return trustLevels({
      active: agent.status === 'active',
      frozen: Boolean(agent.frozen),
      epochOpenedAt: epoch ? Number(epoch.opened_at) : agent.createdAt,
      ephemeralSession: opts.ephemeral === true,
      standing: s,
    }, deps.clock.now());
  };
  return {
    of,
    /**
     * Levels of many agents (a directory page), by the same rule, with their open epochs read once.
     * `opened`: the agents' open epochs when the caller has them already (epochs.openOf).
     */
    async ofMany(agents: LevelSubject[], opened: Map<string, { openedAt: number }>): Promise<Map<string, TrustLevel[]>> {
      const now = deps.clock.now();
      const of = standings
        ? await standings(agents.map((a) => a.agentId)).then((m) => agents.map((a) => m.get(a.agentId) ?? { stakedActive: false, sponsoredActive: false }))
        : await Promise.all(agents.map((a) => standing(a.agentId)));
      return new Map(agents.map((a, i) => [a.agentId, trustLevels({
        active: a.status === 'active',
        frozen: Boolean(a.frozen),
        epochOpenedAt: opened.get(a.agentId)?.openedAt ?? a.createdAt,
        ephemeralSession: false,
        standing: of[i],
      }, now)]));
    },
    /** The stake module installs its projection here when it lands. */
    useStanding(reader: StandingReader, many?: StandingsReader) {
      standing = reader;
      standings = many;
    },
  };
}

export type TrustLevelsService = ReturnType<typeof createTrustLevels>;
