import { ApiError } from '../../http/errors';
import type { AuthContext } from '../../http/route-config';
import type { CommunityStats } from '../../http/envelope';
import { iso, type Clock } from '../../lib/clock';
import { generateEd25519, KeyFormatError, parseEd25519PublicKey, publicKeyPem } from '../../lib/ed25519';
import { isUuid, newId } from '../../lib/ids';
import { passportChallengePayload, PASSPORT_CHALLENGE_SCHEME } from '../../lib/signing';
import { tierOf } from '../../lib/tiers';
import { isBlank } from '../../lib/text';
import { isUniqueViolation } from '../../infra/db/dialect';
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { createKeys, issueToken, type KeyEvent, type KeyEventSink } from './keys';
import { createLifecycleStore } from './lifecycle-store';
import { createPassportLifecycle, spkiSha256, type EphemeralInput } from './passport-lifecycle';
import { createCustodyPort } from './custody-port';
import { createCustodyStore } from './custody-store';
import { publicPassport, verifiedCapabilities } from './passport-view';
import { createPassportSignatures } from './signatures';
import { createDelegatedKeys } from './delegated-keys';
import type { IdentityStore, NewAgent } from './store';
import { affiliationOf, externalUrlProblem } from './validation';

export {
  API_KEY_PREFIX, LISTED_INACTIVE_KEYS, MAX_ACTIVE_SCOPED_KEYS, SESSION_PREFIX, SESSION_TTL_SECONDS, type KeyEvent,
} from './keys';
export const OWNER_RECOVERY_COVENANT = 'owner-recovery-key';

export interface RegisterInput {
  agent_name: string;
  owner_identifier: string;
  agree_to_terms: boolean;
  referral_agent?: string;
  passport_public_key?: string;
  recovery_public_key?: string;
  registration_source?: string;
  declared_affiliation_token?: string;
  agent_card_url?: string;
}

export interface IdentityDeps {
  store: IdentityStore;
  clock: Clock;
  baseUrl: string;
  challengeTtlSeconds: number;
  affiliationSecret?: string;
  foundingPeriodEnd: string;
  /** Milliseconds a verified token lookup may be reused (0 = every request reads the database). */
  authCacheMs?: number;
  /** Runs in the registration's transaction (the trust log opens epoch 1). */
  onRegistered?: (trx: Transaction<Database>, agentId: string, at: number) => Promise<void>;
  /** The trust layer's levels function (src/modules/trust/levels.ts); without it every agent is at floor. */
  trustLevels?: LevelsReader;
  /** Records a scoped key's creation or revocation (the trust log), in that change's transaction. */
  onKeyEvent?: KeyEventSink;
}

/** Trust levels of an agent, from the trust layer (identity states what it knows of the agent). */
export type LevelsReader = (
  agent: { agentId: string; status: string; frozen: number; createdAt: number }, opts?: { ephemeral?: boolean },
) => Promise<string[]>;

/** A passport's skill_vouches per listed skill (the directory module's vouches). */
export type SkillVouchesReader = (agentId: string, skills: string[]) => Promise<Record<string, { count: number; raw_count: number; weighted_count: number }>>;

/** The reputation a passport shows (the reputation module's current standing). */
export type ReputationReader = (agentId: string, decomposed: boolean) => Promise<{ reputation: unknown; reputation_sub_signals?: unknown }>;

const DAY = 86_400_000;


export function createIdentityService(deps: IdentityDeps) {
  const { store, clock } = deps;
  const keys = createKeys({ store, clock, authCacheMs: deps.authCacheMs, onKeyEvent: deps.onKeyEvent });
  let reputationOf: ReputationReader | undefined;
  /** The end of an agent's staged resurrection (the custody module, built after identity). */
  let stagedUntilOf: ((agentId: string) => Promise<number | undefined>) | undefined;
  const stagedResurrectionUntil = async (agentId: string): Promise<string | null> => {
    const until = stagedUntilOf ? await stagedUntilOf(agentId) : undefined;
    return until === undefined ? null : iso(until);
  };
  const levelsOf: LevelsReader = deps.trustLevels ?? (async () => ['floor']);
  const levelsOfAgent = (a: { agent_id: string; status: string; frozen: number; created_at: number }, ephemeral = false) =>
    levelsOf({ agentId: a.agent_id, status: a.status, frozen: a.frozen, createdAt: Number(a.created_at) }, { ephemeral });
  let skillVouchesOf: SkillVouchesReader | undefined;
  let onDescribed: ((trx: Transaction<Database>, agentId: string) => Promise<void>) | undefined;
  let syntheticProfiles: (() => Promise<number>) | undefined;
  const { onRegistered } = deps;
  const lifecycleStore = createLifecycleStore(store.db);
  const lifecycle = createPassportLifecycle({
    store, lifecycle: lifecycleStore, clock, challengeTtlSeconds: deps.challengeTtlSeconds, onKeyEvent: deps.onKeyEvent, forgetCachedTokens: () => keys.forgetCachedTokens(),
    ephemeralLevels: async (agentId) => {
      const agent = await store.findAgent(agentId);
      return agent ? levelsOfAgent(agent, true) : ['floor', 'ephemeral'];
    },
  });

  function parseRecoveryKey(pem: string): string {
    if (!pem.trim().startsWith('-----BEGIN')) {
      throw new ApiError(422, 'INVALID_RECOVERY_PUBLIC_KEY', 'recovery_public_key must be a PEM Ed25519 public key (SPKI)');
    }
    try {
      return publicKeyPem(parseEd25519PublicKey(pem));
    } catch (e) {
      throw new ApiError(422, 'INVALID_RECOVERY_PUBLIC_KEY', `recovery_public_key: ${(e as Error).message}`);
    }
  }

  async function referralFor(input: RegisterInput): Promise<NewAgent['referral']> {
    if (!input.referral_agent) return undefined;
    const referrer = await store.findAgent(input.referral_agent.toLowerCase());
    if (!referrer) return { referrer_agent_id: input.referral_agent.toLowerCase(), status: 'excluded', reason: 'unknown_referrer' };
    if (referrer.owner_identifier === input.owner_identifier) {
      return { referrer_agent_id: referrer.agent_id, status: 'excluded', reason: 'same_owner' };
    }
    return { referrer_agent_id: referrer.agent_id, status: 'deferred', reason: null };
  }

  const verifySigned = createPassportSignatures({ store, clock });

  return {
    ...keys,

    /** Verifies a signed request (a passport signature over scheme X for challenge Y): signatures.ts. */
    verifySigned,

    /** Issues the scoped key of a delegation (the declarations module): delegated-keys.ts. */
    issueDelegatedKey: createDelegatedKeys({ store, clock, onKeyEvent: deps.onKeyEvent }),

    /** The narrow interface of the custody module (covenants, recovery, custody transfer): custody-port.ts. */
    custody: createCustodyPort({
      store, custodyStore: createCustodyStore(store.db), clock, issueChallenge: lifecycle.issueChallenge,
      verifySigned, forgetCachedTokens: () => keys.forgetCachedTokens(), onKeyEvent: deps.onKeyEvent,
    }),

    async register(input: RegisterInput) {
      if (input.agree_to_terms !== true) {
        throw new ApiError(422, 'TERMS_NOT_ACCEPTED', 'agree_to_terms must be true to register');
      }
      if (input.referral_agent !== undefined && !isUuid(input.referral_agent)) {
        throw new ApiError(422, 'INVALID_REFERRAL_AGENT', 'referral_agent must be an agent id (UUID)');
      }
      let publicPem: string;
      let privatePem: string | null = null;
      let derivation: string;
      if (input.passport_public_key !== undefined) {
        try {
          publicPem = publicKeyPem(parseEd25519PublicKey(input.passport_public_key));
        } catch (e) {
          const why = e instanceof KeyFormatError ? e.message : 'unreadable key';
          throw new ApiError(422, 'INVALID_PASSPORT_PUBLIC_KEY', `passport_public_key is not a valid Ed25519 public key: ${why}`);
        }
        derivation = 'operator_derived';
      } else {
        const pair = generateEd25519();
        publicPem = pair.publicKeyPem;
        privatePem = pair.privateKeyPem;
        derivation = 'service_generated';
      }
      const recoveryPem = input.recovery_public_key !== undefined ? parseRecoveryKey(input.recovery_public_key) : undefined;
      if (input.agent_card_url !== undefined) {
        const problem = externalUrlProblem(input.agent_card_url);
        if (problem) throw new ApiError(422, 'AGENT_CARD_URL_INVALID', `agent_card_url ${problem}`);
      }

      const now = clock.now();
      const agentId = newId();
      const root = issueToken(clock, agentId, 'root');
      const referral = await referralFor(input);
      const recoveryFingerprint = recoveryPem ? spkiSha256(recoveryPem) : undefined;
      try {
        await store.insertAgent({
          agent: {
            agent_id: agentId, agent_name: input.agent_name, owner_identifier: input.owner_identifier, tier: 'free',
            status: 'active', frozen: 0, referral_agent: referral?.referrer_agent_id ?? null,
            registration_source: input.registration_source ?? null, agent_card_url: input.agent_card_url ?? null,
            affiliation: affiliationOf(input.declared_affiliation_token, deps.affiliationSecret) ?? null,
            created_at: now, updated_at: now,
          },
          passport: {
            agent_id: agentId, public_key_pem: publicPem, derivation_method: derivation, key_algorithm: 'ed25519',
            created_at: now, revoked_at: null, bio: null, skills: '[]', listed: 0,
            sub_signal_visibility: 'decomposed', self_reported_capabilities: null, agent_type: null, domain: null,
          },
          rootKey: root.row,
          recovery: recoveryPem
            ? {
                public_key_pem: recoveryPem,
                covenant: {
                  covenant_id: newId(),
                  template_id: OWNER_RECOVERY_COVENANT,
                  params: JSON.stringify({ recovery_key_sha256: recoveryFingerprint, veto_window_days: 7 }),
                },
              }
            : undefined,
          referral,
        }, onRegistered ? (trx) => onRegistered(trx, agentId, now) : undefined);
      } catch (e) {
        if (isUniqueViolation(e)) {
          throw new ApiError(409, 'AGENT_ALREADY_REGISTERED', 'An agent with this agent_name and owner_identifier already exists');
        }
        throw e;
      }
      return {
        agentId,
        apiKey: root.token,
        tier: 'free',
        passport: {
          did: `did:svc:${agentId}`,
          public_key: publicPem,
          private_key: privatePem,
          derivation_method: derivation,
          key_algorithm: 'ed25519',
          suite: 'ed25519',
        },
        recovery: recoveryPem
          ? { enrolled: true, covenant_template_id: OWNER_RECOVERY_COVENANT, recovery_key_sha256: recoveryFingerprint }
          : { enrolled: false, covenant_template_id: null },
        referral: referral ? { referrer_agent_id: referral.referrer_agent_id, status: referral.status, reason: referral.reason } : null,
      };
    },

    /** Billing moves an agent between tiers (credit purchases); cached token lookups pick it up. */
    async setTier(agentId: string, tier: string) {
      await store.updateTier(agentId, tier, clock.now());
      keys.forgetCachedTokens();
    },

    async getAgent(agentId: string) {
      return store.findAgent(agentId);
    },

    async me(auth: AuthContext) {
      const now = clock.now();
      const agent = await store.agentProfile(auth.agentId, now);
      if (!agent) throw new ApiError(401, 'INVALID_API_KEY', 'The agent of this key no longer exists');
      // Scoped keys are rare: read their scopes only when the agent has any.
      const scoped = Number(agent.scoped_key_count) > 0 ? await store.activeScopedKeyScopes(auth.agentId, now) : [];
      const tier = tierOf(agent.tier);
      return {
        status: 'success',
        agent_id: agent.agent_id,
        agent_name: agent.agent_name,
        owner_identifier: agent.owner_identifier,
        did: `did:svc:${agent.agent_id}`,
        tier: agent.tier,
        tier_label: tier.label,
        tier_description: tier.description,
        account_status: agent.status,
        frozen: agent.frozen === 1,
        referral_code: agent.agent_id,
        referral_agent: agent.referral_agent,
        referral_status: agent.referral_status ?? null,
        trust_levels: await levelsOfAgent(agent, auth.ephemeral === true),
        verified_capabilities: verifiedCapabilities(agent, scoped.map((s) => JSON.parse(s.scopes) as string[])),
        registration_source: agent.registration_source,
        agent_card_url: agent.agent_card_url,
        affiliation: agent.affiliation,
        recovery_enrolled: agent.recovery_agent_id !== null,
        covenant_template_id: agent.covenant_template_id ?? null,
        staged_resurrection_until: await stagedResurrectionUntil(agent.agent_id),
        authenticated_with: { kind: auth.keyKind, scopes: auth.scopes, ...(auth.ephemeralPassportId ? { ephemeral_passport_id: auth.ephemeralPassportId } : {}) },
        passport_url: `${deps.baseUrl}/v1/agents/${agent.agent_id}/passport`,
        created_at: iso(agent.created_at),
      };
    },

    async publicPassport(agentId: string) {
      if (!isUuid(agentId)) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      const id = agentId.toLowerCase();
      const [agent, passport, scoped] = await Promise.all([
        store.findAgent(id), store.findPassport(id), store.activeScopedKeyScopes(id, clock.now()),
      ]);
      if (!agent || !passport) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      const levels = await levelsOfAgent(agent);
      const view = publicPassport(agent, passport, {
        baseUrl: deps.baseUrl, scopedKeyScopes: scoped.map((s) => JSON.parse(s.scopes) as string[]), trustLevels: levels,
      });
      const [standing, skillVouches, staged] = await Promise.all([
        reputationOf ? reputationOf(id, passport.sub_signal_visibility === 'decomposed') : undefined,
        skillVouchesOf ? skillVouchesOf(id, view.skills) : undefined,
        stagedResurrectionUntil(id),
      ]);
      return { ...view, ...(standing ?? {}), ...(skillVouches ? { skill_vouches: skillVouches } : {}), staged_resurrection_until: staged } as typeof view & { staged_resurrection_until: typeof staged };
    },

    /** The custody module supplies the end of a staged resurrection (GET /v1/me and the passport show it). */
    useCustodyStatus(reader: (agentId: string) => Promise<number | undefined>) {
      stagedUntilOf = reader;
    },

    /** The directory module supplies the passport's skill_vouches (it is built after identity). */
    useSkillVouches(reader: SkillVouchesReader) {
      skillVouchesOf = reader;
    },

    /** The directory updates its row in the description's transaction, and counts its synthetic profiles (built after identity). */
    useDirectory(d: { onDescribed: (trx: Transaction<Database>, agentId: string) => Promise<void>; syntheticProfiles: () => Promise<number> }) {
      onDescribed = d.onDescribed;
      syntheticProfiles = d.syntheticProfiles;
    },

    /** Identity's share of the trust adoption report. */
    async trustAdoption() {
      const [listed, counts, ephemeral] = await Promise.all([store.countListed(), store.trustCounts(clock.now()), lifecycle.ephemeralLast30Days()]);
      return { listed_agents: listed, ...counts, ephemeral_passports_last_30d: ephemeral };
    },

    /** The reputation module supplies the figures a passport shows (it is built after identity). */
    useReputation(reader: ReputationReader) {
      reputationOf = reader;
    },

    /** What the trust layer needs to know of an agent; undefined when there is none. */
    /** `levels: false` leaves trustLevels empty, for a caller that needs only the agent's existence and status (no stake or epoch reads). */
    async trustProfile(agentId: string, opts: { levels?: boolean } = {}) {
      if (!isUuid(agentId)) return undefined;
      const id = agentId.toLowerCase();
      const [agent, passport] = await Promise.all([store.findAgent(id), store.findPassport(id)]);
      if (!agent || !passport) return undefined;
      return {
        agentId: id, owner: agent.owner_identifier, active: agent.status === 'active', passportActive: passport.revoked_at === null,
        trustLevels: opts.levels === false ? [] : await levelsOfAgent(agent), subSignalVisibility: passport.sub_signal_visibility,
        skills: JSON.parse(passport.skills) as string[],
      };
    },

    /** `recovery`: a challenge for a recovery step, given also when the passport is revoked (a recovery replaces it). */
    async createChallenge(agentId: string, purpose: 'session' | 'recovery' = 'session') {
      const id = agentId.toLowerCase();
      const passport = await store.findPassport(id);
      if (!passport) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      if (passport.revoked_at !== null && purpose !== 'recovery') throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked');
      const issued = await lifecycle.issueChallenge(id);
      const fields = { agentId: id, ...issued };
      return {
        status: 'success',
        agent_id: id,
        purpose,
        challenge_id: issued.challengeId,
        challenge_nonce: issued.nonce,
        scheme: PASSPORT_CHALLENGE_SCHEME,
        sign_payload: passportChallengePayload(fields),
        sign_payload_encoding: 'utf-8',
        issued_at: fields.issuedAt,
        expires_at: fields.expiresAt,
      };
    },

    /** POST /v1/auth/passport/verify: passport-lifecycle.ts (the replaced key verifies during a rotation's grace). */
    verifyChallenge: (input: { agent_id: string; challenge_id: string; signature: string }) => lifecycle.verifyChallenge(input),

    /** POST /v1/me/passport/rotate (root key): passport-lifecycle.ts. */
    rotatePassport: (auth: AuthContext, input: { public_key: string; challenge_id: string; signature: string }) => lifecycle.rotate(auth, input),

    /** POST /v1/auth/passport/ephemeral (root key or a signed challenge): passport-lifecycle.ts. */
    issueEphemeral: (auth: AuthContext | undefined, input: EphemeralInput) => lifecycle.issueEphemeral(auth, input),

    /** POST /v1/agents/passport/description: what is sent replaces the stored value; the public passport after it. */
    async describe(auth: AuthContext, input: {
      bio?: string | null; skills?: string[]; listed?: boolean; reputation_sub_signal_visibility?: string; agent_type?: string | null; domain?: string | null;
    }) {
      const patch = {
        ...(input.bio !== undefined ? { bio: input.bio === null || input.bio.trim() === '' ? null : input.bio } : {}),
        ...(input.skills !== undefined ? { skills: JSON.stringify(input.skills) } : {}),
        ...(input.listed !== undefined ? { listed: input.listed ? 1 : 0 } : {}),
        ...(input.reputation_sub_signal_visibility !== undefined ? { sub_signal_visibility: input.reputation_sub_signal_visibility } : {}),
        ...(input.agent_type !== undefined ? { agent_type: input.agent_type } : {}),
        ...(input.domain !== undefined ? { domain: input.domain } : {}),
      };
      const described = onDescribed;
      if (!(await store.updateDescription(auth.agentId, patch, described ? (trx) => described(trx, auth.agentId) : undefined))) {
        throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: its description can no longer change');
      }
      return { status: 'success', passport: await this.publicPassport(auth.agentId), agent_card_url: `${deps.baseUrl}/v1/agents/${auth.agentId}/agent-card` };
    },

    /** Self-reported capabilities: text as data (NUL and lone surrogates already refused by the input guard). */
    async selfReport(auth: AuthContext, text: string | null) {
      const value = text === null || isBlank(text) ? null : text;
      if (!(await store.updateSelfReported(auth.agentId, value))) {
        throw new ApiError(403, 'PASSPORT_REVOKED', 'This passport has been revoked: its capabilities text can no longer change');
      }
      return { status: 'success', passport: await this.publicPassport(auth.agentId) };
    },

    /**
     * POST /v1/me/passport/revoke (root): the passport stops verifying challenges and every
     * session token derived from it stops working. The root API key keeps working so the owner can
     * still reach the account. Revoking twice is refused with PASSPORT_REVOKED.
     */
    async revokePassport(auth: AuthContext) {
      const now = clock.now();
      const passport = await store.findPassport(auth.agentId);
      const onKeyEvent = deps.onKeyEvent;
      const event: KeyEvent | undefined = passport ? {
        kind: 'passport.revoked', agentId: auth.agentId, at: now,
        data: { public_key_sha256: spkiSha256(passport.public_key_pem) },
      } : undefined;
      // A rotation's grace ends with the passport: the replaced key stops verifying too.
      const also = async (trx: Transaction<Database>) => {
        await lifecycleStore.endGrace(trx, auth.agentId, now);
        if (onKeyEvent && event) await onKeyEvent(trx, event);
      };
      if (!(await store.revokePassport(auth.agentId, now, also))) {
        throw new ApiError(409, 'PASSPORT_REVOKED', 'This passport is already revoked');
      }
      keys.forgetCachedTokens();
      return { status: 'success', agent_id: auth.agentId, revoked_at: iso(now) };
    },

    async communityStats(): Promise<CommunityStats> {
      const now = clock.now();
      const [all, week, listed, synthetic] = await Promise.all([
        store.countAgents(), store.countAgents(now - 7 * DAY), store.countListed(), syntheticProfiles ? syntheticProfiles() : 0,
      ]);
      return {
        agents_registered: all,
        agents_registered_last_7d: week,
        directory_listed: listed,
        founding_period_ends_at: new Date(deps.foundingPeriodEnd).toISOString(),
        // Operator-configured founding profiles are counted apart: directory_listed counts registered agents only.
        directory_synthetic_profiles: synthetic,
      };
    },

    async adminView(agentId: string) {
      const agent = isUuid(agentId) ? await store.findAgent(agentId.toLowerCase()) : undefined;
      if (!agent) throw new ApiError(404, 'AGENT_NOT_FOUND', 'No agent with this id');
      const referral = await store.findReferral(agent.agent_id);
      return {
        status: 'success',
        agent: {
          ...agent,
          frozen: agent.frozen === 1,
          created_at: iso(agent.created_at),
          updated_at: iso(agent.updated_at),
        },
        referral: referral ? { ...referral, created_at: iso(referral.created_at), updated_at: iso(referral.updated_at) } : null,
      };
    },
  };
}

export type IdentityService = ReturnType<typeof createIdentityService>;
