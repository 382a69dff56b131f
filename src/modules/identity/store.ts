import type SQLite from 'better-sqlite3';
import type { Kysely, Transaction } from 'kysely';
import { prepared } from '../../infra/db/prepared';
import type { Database } from '../../infra/db/schema';
import type { AgentsTable, ApiKeysTable, PassportChallengesTable, PassportsTable } from '../../infra/db/tables/core';

export type Db = Kysely<Database> | Transaction<Database>;

export interface NewAgent {
  agent: AgentsTable;
  passport: PassportsTable;
  rootKey: ApiKeysTable;
  recovery?: { public_key_pem: string; covenant: { covenant_id: string; template_id: string; params: string } };
  referral?: { referrer_agent_id: string; status: string; reason: string | null };
}

export interface KeyLookup {
  agent_id: string;
  kind: string;
  scopes: string;
  /** A delegated key's write_set (JSON array of tool names); null otherwise. */
  tools: string | null;
  expires_at: number | null;
  tier: string;
  status: string;
  agent_created_at: number;
  passport_revoked_at: number | null;
  /** A session token: the passport key version it was issued under (null: 0). */
  passport_key_version: number | null;
  /** A session token of an ephemeral passport: its id. */
  ephemeral_passport_id: string | null;
  /** The agent's passport key version now (null: never rotated, 0). */
  current_key_version: number | null;
  /** Until when the key the latest rotation replaced (and its sessions) still work. */
  rotation_grace_until: number | null;
}

class OverCap extends Error {}

/** SQL of the identity module. Every per-agent query is keyed by agent_id. */
export function createIdentityStore(db: Kysely<Database>, sqlite?: SQLite.Database) {
  // Hot queries (every authenticated request; GET /v1/me) are compiled once.
  const S = { hash: '\u0000hash', agent: '\u0000agent', now: -987_654_321_012_345 };
  const lookupKeyQ = prepared(db, S, (s) => db
    .selectFrom('api_keys as k')
    .innerJoin('agents as a', 'a.agent_id', 'k.agent_id')
    .leftJoin('passports as p', 'p.agent_id', 'k.agent_id')
    .leftJoin('passport_rotations as r', 'r.agent_id', 'k.agent_id')
    .select([
      'k.agent_id', 'k.kind', 'k.scopes', 'k.tools', 'k.expires_at', 'a.tier', 'a.status',
      'a.created_at as agent_created_at', 'p.revoked_at as passport_revoked_at',
      'k.passport_key_version', 'k.ephemeral_passport_id', 'r.key_version as current_key_version', 'r.grace_until as rotation_grace_until',
    ])
    .where('k.key_hash', '=', s.hash)
    .where('k.revoked_at', 'is', null), sqlite);
  const profileQ = prepared(db, S, (s) => db
    .selectFrom('agents as a')
    .leftJoin('covenants as c', (j) => j.onRef('c.agent_id', '=', 'a.agent_id').on('c.superseded_at', 'is', null))
    .leftJoin('recovery_keys as r', 'r.agent_id', 'a.agent_id')
    .leftJoin('referrals as f', 'f.referred_agent_id', 'a.agent_id')
    .selectAll('a')
    .select((eb) => [
      'c.template_id as covenant_template_id', 'r.agent_id as recovery_agent_id', 'f.status as referral_status',
      eb.selectFrom('api_keys as k').select((e) => e.fn.countAll<number>().as('n'))
        .where('k.agent_id', '=', s.agent).where('k.kind', '=', 'scoped').where('k.revoked_at', 'is', null)
        .where((w) => w.or([w('k.expires_at', 'is', null), w('k.expires_at', '>', s.now)]))
        .as('scoped_key_count'),
    ])
    .where('a.agent_id', '=', s.agent), sqlite);

  return {
    db,

    /** Registration in one transaction; `also` runs in it last (the trust log's epoch 1). */
    async insertAgent(n: NewAgent, also?: (trx: Transaction<Database>) => Promise<void>): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('agents').values(n.agent).execute();
        await trx.insertInto('passports').values(n.passport).execute();
        await trx.insertInto('api_keys').values(n.rootKey).execute();
        if (n.recovery) {
          await trx.insertInto('recovery_keys')
            .values({ agent_id: n.agent.agent_id, public_key_pem: n.recovery.public_key_pem, enrolled_at: n.agent.created_at })
            .execute();
          await trx.insertInto('covenants')
            .values({ ...n.recovery.covenant, agent_id: n.agent.agent_id, bound_at: n.agent.created_at, superseded_at: null })
            .execute();
        }
        if (n.referral) {
          await trx.insertInto('referrals')
            .values({ referred_agent_id: n.agent.agent_id, ...n.referral, created_at: n.agent.created_at, updated_at: n.agent.created_at })
            .execute();
        }
        if (also) await also(trx);
      });
    },

    findAgent(agentId: string) {
      return db.selectFrom('agents').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
    },

    /** The agent with its active covenant, recovery enrolment, referral and scoped-key count, in one read (GET /v1/me). */
    async agentProfile(agentId: string, now: number) {
      return (await profileQ({ agent: agentId, now, hash: null }))[0];
    },

    findPassport(agentId: string) {
      return db.selectFrom('passports').selectAll().where('agent_id', '=', agentId).executeTakeFirst();
    },

    /** One indexed read per authenticated request: key, agent and passport state together. */
    async lookupKey(keyHash: string): Promise<KeyLookup | undefined> {
      return (await lookupKeyQ({ hash: keyHash, agent: null, now: null }))[0] as KeyLookup | undefined;
    },

    activeScopedKeyScopes(agentId: string, now: number) {
      return db
        .selectFrom('api_keys')
        .select('scopes')
        .where('agent_id', '=', agentId)
        .where('kind', '=', 'scoped')
        .where('revoked_at', 'is', null)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .execute();
    },

    /**
     * Stores a scoped key and runs `also` (its trust log entry) in one transaction; false, with nothing
     * stored, when the agent would then hold more than `cap` active scoped keys. The count is read after
     * `also`, which takes the trust log's append lock: concurrent creations are counted one after another.
     */
    async insertScopedKey(key: ApiKeysTable, cap: number, now: number, also?: (trx: Transaction<Database>) => Promise<void>): Promise<boolean> {
      try {
        return await db.transaction().execute(async (trx) => {
          await trx.insertInto('api_keys').values(key).execute();
          if (also) await also(trx);
          const r = await trx.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n'))
            .where('agent_id', '=', key.agent_id).where('kind', '=', 'scoped').where('revoked_at', 'is', null)
            .where((w) => w.or([w('expires_at', 'is', null), w('expires_at', '>', now)]))
            .executeTakeFirstOrThrow();
          if (Number(r.n) > cap) throw new OverCap();
          return true;
        });
      } catch (e) {
        if (e instanceof OverCap) return false;
        throw e;
      }
    },

    /** The agent's scoped keys, newest first: every active one, and the newest `inactive` revoked or expired ones. */
    async listScopedKeys(agentId: string, now: number, inactive: number) {
      const cols = ['key_id', 'scopes', 'label', 'created_at', 'expires_at', 'revoked_at'] as const;
      const base = () => db.selectFrom('api_keys').select(cols).where('agent_id', '=', agentId).where('kind', '=', 'scoped');
      const [live, gone] = await Promise.all([
        base().where('revoked_at', 'is', null).where((w) => w.or([w('expires_at', 'is', null), w('expires_at', '>', now)]))
          .orderBy('created_at', 'desc').orderBy('key_id', 'desc').execute(),
        base().where((w) => w.or([w('revoked_at', 'is not', null), w('expires_at', '<=', now)]))
          .orderBy('created_at', 'desc').orderBy('key_id', 'desc').limit(inactive).execute(),
      ]);
      return [...live, ...gone].sort((a, b) => Number(b.created_at) - Number(a.created_at) || String(b.key_id).localeCompare(String(a.key_id)));
    },

    /** One scoped key of the agent (undefined for another agent's key). */
    findScopedKey(agentId: string, keyId: string) {
      return db.selectFrom('api_keys').select(['key_id', 'scopes', 'label', 'created_at', 'expires_at', 'revoked_at'])
        .where('key_id', '=', keyId).where('agent_id', '=', agentId).where('kind', '=', 'scoped').executeTakeFirst();
    },

    /** Revokes a scoped key and runs `also` in the same transaction; false when it was not active-or-expired and unrevoked. */
    async revokeScopedKey(agentId: string, keyId: string, now: number, also?: (trx: Transaction<Database>) => Promise<void>): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const r = await trx.updateTable('api_keys').set({ revoked_at: now })
          .where('key_id', '=', keyId).where('agent_id', '=', agentId).where('kind', '=', 'scoped').where('revoked_at', 'is', null)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) !== 1) return false;
        if (also) await also(trx);
        return true;
      });
    },

    /** Revokes the passport and every session token derived from it, in one transaction. */
    /** Revokes the passport and its sessions; `also` runs in the same transaction when it was revoked now (the trust log). */
    async revokePassport(agentId: string, now: number, also?: (trx: Transaction<Database>) => Promise<void>): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const r = await trx.updateTable('passports').set({ revoked_at: now })
          .where('agent_id', '=', agentId).where('revoked_at', 'is', null).executeTakeFirst();
        await trx.updateTable('api_keys').set({ revoked_at: now })
          .where('agent_id', '=', agentId).where('kind', '=', 'session').where('revoked_at', 'is', null).execute();
        const revoked = Number(r.numUpdatedRows) === 1;
        if (revoked && also) await also(trx);
        return revoked;
      });
    },

    /** The self-reported capabilities text; false when the passport is revoked (nothing changed). */
    async updateSelfReported(agentId: string, text: string | null): Promise<boolean> {
      const r = await db.updateTable('passports').set({ self_reported_capabilities: text }).where('agent_id', '=', agentId).where('revoked_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /** The directory description; false when the passport is revoked (nothing changed). */
    async updateDescription(
      agentId: string,
      patch: { bio?: string | null; skills?: string; listed?: number; sub_signal_visibility?: string; agent_type?: string | null; domain?: string | null },
      /** Runs in the update's transaction once it changed the passport (the directory's row). */
      also?: (trx: Transaction<Database>) => Promise<void>,
    ): Promise<boolean> {
      // Nothing to set is no UPDATE (SQL has none without a SET): only whether the passport may change.
      if (Object.keys(patch).length === 0) {
        return (await db.selectFrom('passports').select('agent_id').where('agent_id', '=', agentId).where('revoked_at', 'is', null).executeTakeFirst()) !== undefined;
      }
      return db.transaction().execute(async (trx) => {
        const r = await trx.updateTable('passports').set(patch).where('agent_id', '=', agentId).where('revoked_at', 'is', null).executeTakeFirst();
        const changed = Number(r.numUpdatedRows) === 1;
        if (changed && also) await also(trx);
        return changed;
      });
    },

    async updateTier(agentId: string, tier: string, now: number): Promise<void> {
      await db.updateTable('agents').set({ tier, updated_at: now }).where('agent_id', '=', agentId).execute();
    },

    insertKey(key: ApiKeysTable) {
      return db.insertInto('api_keys').values(key).execute();
    },

    insertChallenge(c: PassportChallengesTable) {
      return db.insertInto('passport_challenges').values(c).execute();
    },

    findChallenge(challengeId: string, agentId: string) {
      return db
        .selectFrom('passport_challenges')
        .selectAll()
        .where('challenge_id', '=', challengeId)
        .where('agent_id', '=', agentId)
        .executeTakeFirst();
    },

    /** Marks a nonce used; true only for the one caller that consumed it. */
    async consumeChallenge(challengeId: string, now: number): Promise<boolean> {
      const r = await db
        .updateTable('passport_challenges')
        .set({ used_at: now })
        .where('challenge_id', '=', challengeId)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /** Keeps the agent's `keep` newest challenges (used or not) and deletes the rest. */
    trimChallenges(agentId: string, keep: number) {
      return db.deleteFrom('passport_challenges').where('agent_id', '=', agentId)
        .where('challenge_id', 'not in', db.selectFrom('passport_challenges').select('challenge_id').where('agent_id', '=', agentId)
          .orderBy('issued_at', 'desc').orderBy('challenge_id', 'desc').limit(keep))
        .execute();
    },

    deleteExpiredChallenges(before: number) {
      return db.deleteFrom('passport_challenges').where('expires_at', '<', before).execute();
    },

    findReferral(agentId: string) {
      return db.selectFrom('referrals').selectAll().where('referred_agent_id', '=', agentId).executeTakeFirst();
    },

    async countAgents(since?: number): Promise<number> {
      let q = db.selectFrom('agents').select((eb) => eb.fn.countAll<number>().as('n'));
      if (since !== undefined) q = q.where('created_at', '>=', since);
      const r = await q.executeTakeFirstOrThrow();
      return Number(r.n);
    },

    async countListed(): Promise<number> {
      const r = await db.selectFrom('passports').select((eb) => eb.fn.countAll<number>().as('n')).where('listed', '=', 1).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** Active covenants per template, enrolled recovery keys and active scoped keys (trust adoption report). */
    async trustCounts(now: number) {
      const [covenants, recovery, scoped] = await Promise.all([
        db.selectFrom('covenants').select(['template_id', (eb) => eb.fn.countAll<number>().as('n')]).where('superseded_at', 'is', null).groupBy('template_id').execute(),
        db.selectFrom('recovery_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
        db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).where('kind', '=', 'scoped').where('revoked_at', 'is', null)
          .where((w) => w.or([w('expires_at', 'is', null), w('expires_at', '>', now)])).executeTakeFirstOrThrow(),
      ]);
      return {
        covenants_by_template: Object.fromEntries(covenants.map((c) => [c.template_id, Number(c.n)])),
        recovery_keys_enrolled: Number(recovery.n),
        scoped_keys_active: Number(scoped.n),
      };
    },
  };
}

export type IdentityStore = ReturnType<typeof createIdentityStore>;
