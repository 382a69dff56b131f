/**
 * Covenants: how an agent may be recovered. Read by the owner (root key) and publicly; amended with
 * the root key (and the passport's signature, scheme svc.covenant.amend.v1, when the agent has high
 * authority: staked, sponsoring or established); enrolled through the legacy route until its cut-off.
 * Every binding is a trust log entry (`covenant.bound` for the first, `covenant.amended` after), in the
 * transaction that changes the covenants and recovery_keys rows.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { ApiError } from '../../http/errors';
import type { Database } from '../../infra/db/schema';
import type { CovenantsTable } from '../../infra/db/tables/core';
import { canonicalJson } from '../../infra/tlog/jcs';
import { isWebError, type GuardedClient } from '../../infra/web';
import { iso, type Clock } from '../../lib/clock';
import { newId } from '../../lib/ids';
import { COVENANT_AMEND_SCHEME } from '../../lib/signing';
import type { CustodyPort } from '../identity/custody-port';
import type { Epochs } from '../trust/epochs';
import type { TrustLog } from '../trust/log';
import {
  ACTIVE_TEMPLATES, checkParams, ENROLMENT_GRACE_MS, isTemplate, keySha256, LEGACY_ENROL_CLOSES_AT, publicParams, readRecoveryKey, storedParams, TEMPLATE_TIER,
  TEMPLATES, type ParamsCheck, type TemplateId,
} from './model';
import type { CustodyStore } from './store';

/** Levels that make an agent high-authority: its covenant changes need the passport's signature. */
export const HIGH_AUTHORITY_LEVELS = ['staked', 'established'] as const;

export interface CovenantDeps {
  db: Kysely<Database>;
  store: CustodyStore;
  log: TrustLog;
  epochs: Epochs;
  clock: Clock;
  identity: CustodyPort;
  /** The agent's trust levels (the trust layer's one function). */
  levelsOf: (agentId: string) => Promise<string[]>;
  /** The agent is sponsoring another (the stake module; false until it exists). */
  sponsoring?: (agentId: string) => Promise<boolean>;
  /** Guarded outbound client: a channel's URL must be https on a public host. */
  client: GuardedClient;
  /** Why the agent's covenant may not change now (an open recovery intent, a staged resurrection), or undefined. */
  amendBlocked: (agentId: string, trx?: Transaction<Database>) => Promise<{ reason: string; message: string } | undefined>;
}

export interface AmendInput { template_id: string; params: unknown; challenge_id?: string; passport_signature?: string }

const paramsInvalid = (problem: string) => new ApiError(422, 'COVENANT_PARAMS_INVALID', `Invalid params: ${problem}`, { field: 'body.params' });

export function createCovenants(deps: CovenantDeps) {
  const { db, store, log, epochs, clock, identity } = deps;

  const paramsOf = (c: CovenantsTable) => JSON.parse(c.params) as Record<string, unknown>;

  /** The covenant as its owner sees it (root), or as anyone does (`pub`): no PEM, a channel by host. */
  async function view(c: CovenantsTable | undefined, agentId: string, pub: boolean, now: number) {
    if (!c) return null;
    const stored = paramsOf(c);
    const key = c.template_id === 'owner-recovery-key' ? await store.recoveryKey(agentId) : undefined;
    const usableFrom = key ? Number(key.enrolled_at) + ENROLMENT_GRACE_MS : null;
    return {
      covenant_id: c.covenant_id,
      template_id: c.template_id,
      tier: TEMPLATE_TIER[c.template_id as TemplateId] ?? null,
      activation: (ACTIVE_TEMPLATES as readonly string[]).includes(c.template_id) ? 'active' : 'none',
      params: pub ? publicParams(c.template_id, stored) : stored,
      bound_at: iso(Number(c.bound_at)),
      bound_log_index: c.bound_log_index === null || c.bound_log_index === undefined ? null : Number(c.bound_log_index),
      ...(key ? {
        recovery_key: {
          ...(pub ? {} : { public_key: key.public_key_pem }),
          sha256: typeof stored.recovery_key_sha256 === 'string' ? stored.recovery_key_sha256 : null,
          enrolled_at: iso(Number(key.enrolled_at)),
          usable_from: iso(usableFrom as number),
          usable: now >= (usableFrom as number),
        },
      } : {}),
    };
  }

  /** The log's record of a covenant row (its public params; the recovery key by SHA-256 and enrolment time). */
  function logData(row: CovenantsTable, recoveryKey: { sha256: string; enrolledAt: number } | null) {
    return {
      covenant_id: row.covenant_id,
      template_id: row.template_id,
      params: publicParams(row.template_id, paramsOf(row)),
      recovery_key: recoveryKey ? { sha256: recoveryKey.sha256, enrolled_at: iso(recoveryKey.enrolledAt) } : null,
    };
  }

  async function highAuthority(agentId: string): Promise<boolean> {
    const levels = await deps.levelsOf(agentId);
    if (levels.some((l) => (HIGH_AUTHORITY_LEVELS as readonly string[]).includes(l))) return true;
    return deps.sponsoring ? deps.sponsoring(agentId) : false;
  }

  /** Params syntax, then what needs a lookup: named agents exist, a channel's host is public. */
  async function validated(template: TemplateId, params: unknown, agentId: string): Promise<Exclude<ParamsCheck, { ok: false }>> {
    const c = checkParams(template, params, agentId);
    if (!c.ok) throw paramsInvalid(c.problem);
    if (c.template === 'successor-later' || c.template === 'quorum-later') {
      const ids = c.template === 'successor-later' ? [c.successorAgentId] : c.members;
      for (const id of ids) if (!(await identity.agent(id))) throw paramsInvalid(`no agent with id ${id}`);
    }
    if (c.template === 'channel') {
      try {
        await deps.client.validatePublicUrl(c.url, { httpsOnly: true });
      } catch (e) {
        throw paramsInvalid(`url: ${isWebError(e) ? e.message : 'not a public https URL'}`);
      }
    }
    return c;
  }

  function refuseDowngrade(current: CovenantsTable | undefined, template: TemplateId): void {
    if (current && TEMPLATE_TIER[current.template_id as TemplateId] === 'strong' && TEMPLATE_TIER[template] === 'weak') {
      throw new ApiError(403, 'COVENANT_DOWNGRADE_FORBIDDEN',
        `The covenant ${current.template_id} is of the strong tier; ${template} is of the weak tier: a covenant may not be moved to a weaker one`,
        { current_template_id: current.template_id, requested_template_id: template });
    }
  }

  const sameParams = (a: Record<string, unknown>, b: Record<string, unknown>) => canonicalJson(a).equals(canonicalJson(b));

  return {
    view,

    /** GET /v1/me/covenant (root) and GET /v1/agents/{agent_id}/covenant (public). */
    async read(agentId: string, pub: boolean) {
      const now = clock.now();
      return { agent_id: agentId, covenant: await view(await store.activeCovenant(agentId), agentId, pub, now) };
    },

    /** POST /v1/me/covenant/amend (root). */
    async amend(agentId: string, input: AmendInput) {
      if (!isTemplate(input.template_id)) {
        throw new ApiError(422, 'COVENANT_TEMPLATE_INVALID', `template_id must be one of ${TEMPLATES.join(', ')}`, { field: 'body.template_id', templates: TEMPLATES });
      }
      const template = input.template_id;
      const blocked = await deps.amendBlocked(agentId);
      if (blocked) throw new ApiError(403, 'COVENANT_AMEND_FORBIDDEN', blocked.message, { reason: blocked.reason });
      const checked = await validated(template, input.params, agentId);
      const current = await store.activeCovenant(agentId);
      refuseDowngrade(current, template);
      const params = storedParams(checked);
      const now = clock.now();
      if (current && current.template_id === template && sameParams(paramsOf(current), params)) {
        return { status: 'success', changed: false, covenant: (await view(current, agentId, false, now))! };
      }
      const signatureGiven = input.passport_signature !== undefined || input.challenge_id !== undefined;
      let signed = false;
      if (signatureGiven || await highAuthority(agentId)) {
        await identity.verifySigned({
          agentId, scheme: COVENANT_AMEND_SCHEME, challengeId: input.challenge_id, signature: input.passport_signature,
          content: { template_id: input.template_id, params: input.params },
        });
        signed = true;
      }
      const secret = checked.template === 'channel' ? `chsec_${randomBytes(32).toString('base64url')}` : undefined;
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        const again = await deps.amendBlocked(agentId, trx);
        if (again) throw new ApiError(403, 'COVENANT_AMEND_FORBIDDEN', again.message, { reason: again.reason });
        // Another amend may have landed since the checks above: the rule is applied to what is current now.
        const before = await store.activeCovenant(agentId, trx);
        refuseDowngrade(before, template);
        const next: CovenantsTable = {
          covenant_id: newId(), agent_id: agentId, template_id: template, params: JSON.stringify(params), bound_at: now, superseded_at: null, bound_log_index: null,
        };
        if (before) await store.supersede(trx, before.covenant_id, now);
        await store.insertCovenant(trx, next);
        const key = checked.template === 'owner-recovery-key' ? { sha256: checked.keySha256, enrolledAt: now } : null;
        await store.setRecoveryKey(trx, agentId, checked.template === 'owner-recovery-key' ? { agent_id: agentId, public_key_pem: checked.publicKeyPem, enrolled_at: now } : null);
        if (secret) await store.saveChannelSecret(trx, { covenant_id: next.covenant_id, agent_id: agentId, secret, created_at: now });
        const appended = await log.append(trx, {
          kind: before ? 'covenant.amended' : 'covenant.bound', agentId, epoch: await epochs.current(agentId, trx), at: now,
          data: {
            ...logData(next, key),
            bound_by: 'amend',
            supersedes_covenant_id: before?.covenant_id ?? null,
            previous_template_id: before?.template_id ?? null,
            signed,
          },
        });
        await store.setBoundLogIndex(trx, next.covenant_id, appended.index);
        return { ...next, bound_log_index: appended.index };
      });
      return {
        status: 'success',
        changed: true,
        previous_template_id: current?.template_id ?? null,
        signed,
        covenant: (await view(row, agentId, false, now))!,
        ...(secret ? {
          channel_signing_secret: secret,
          channel_signing_notice: 'Shown once: svc signs every recovery code it delivers to the channel with this secret (header svc-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>)',
        } : {}),
      };
    },

    /** POST /v1/me/covenant/enrol (root): the legacy enrolment of an owner-recovery-key covenant, until its cut-off. */
    async enrol(agentId: string, input: { recovery_public_key?: unknown }) {
      const now = clock.now();
      if (now >= Date.parse(LEGACY_ENROL_CLOSES_AT)) {
        throw new ApiError(410, 'LEGACY_COVENANT_ENROL_CLOSED',
          `Legacy enrolment closed at ${LEGACY_ENROL_CLOSES_AT}: bind a covenant with POST /v1/me/covenant/amend`, { closed_at: LEGACY_ENROL_CLOSES_AT });
      }
      if (await store.activeCovenant(agentId)) {
        throw new ApiError(409, 'COVENANT_ALREADY_ENROLLED', 'This agent already has a covenant: change it with POST /v1/me/covenant/amend');
      }
      const key = readRecoveryKey(input.recovery_public_key);
      if ('problem' in key) throw paramsInvalid(key.problem);
      const row = await db.transaction().execute(async (trx) => {
        await log.lockHeadFor(trx);
        if (await store.activeCovenant(agentId, trx)) {
          throw new ApiError(409, 'COVENANT_ALREADY_ENROLLED', 'This agent already has a covenant: change it with POST /v1/me/covenant/amend');
        }
        const next: CovenantsTable = {
          covenant_id: newId(), agent_id: agentId, template_id: 'owner-recovery-key',
          params: JSON.stringify(storedParams({ ok: true, template: 'owner-recovery-key', publicKeyPem: key.pem, keySha256: key.sha256 })),
          bound_at: now, superseded_at: null, bound_log_index: null,
        };
        await store.insertCovenant(trx, next);
        await store.setRecoveryKey(trx, agentId, { agent_id: agentId, public_key_pem: key.pem, enrolled_at: now });
        const appended = await log.append(trx, {
          kind: 'covenant.bound', agentId, epoch: await epochs.current(agentId, trx), at: now,
          data: { ...logData(next, { sha256: key.sha256, enrolledAt: now }), bound_by: 'legacy_enrol', supersedes_covenant_id: null, previous_template_id: null, signed: false },
        });
        await store.setBoundLogIndex(trx, next.covenant_id, appended.index);
        return { ...next, bound_log_index: appended.index };
      });
      return { status: 'success', covenant: (await view(row, agentId, false, now))! };
    },

    /** Registration's transaction: the covenant it bound (a recovery_public_key was given) becomes a log entry. */
    async registered(trx: Transaction<Database>, agentId: string, at: number): Promise<void> {
      const c = await store.activeCovenant(agentId, trx);
      if (!c) return;
      const key = await store.recoveryKey(agentId, trx);
      await appendBound(trx, c, key ? { pem: key.public_key_pem, enrolledAt: Number(key.enrolled_at) } : undefined, at, 'registration');
    },

    /** Covenants bound before the trust log existed get their `covenant.bound` entry, each in its own transaction, once. */
    async backfill(): Promise<number> {
      let done = 0;
      for (;;) {
        const batch = await store.unlogged(100);
        if (batch.length === 0) return done;
        for (const c of batch) {
          await db.transaction().execute(async (trx) => {
            await log.lockHeadFor(trx);
            const still = await trx.selectFrom('covenants').select('bound_log_index').where('covenant_id', '=', c.covenant_id).executeTakeFirst();
            if (!still || (still.bound_log_index !== null && still.bound_log_index !== undefined)) return;
            const key = c.superseded_at === null ? await store.recoveryKey(c.agent_id, trx) : undefined;
            await appendBound(trx, c, key ? { pem: key.public_key_pem, enrolledAt: Number(key.enrolled_at) } : undefined, Number(c.bound_at), 'registration');
            done++;
          });
        }
      }
    },
  };

  async function appendBound(trx: Transaction<Database>, c: CovenantsTable, key: { pem: string; enrolledAt: number } | undefined, at: number, boundBy: string) {
    const appended = await log.append(trx, {
      kind: 'covenant.bound', agentId: c.agent_id, epoch: await epochs.current(c.agent_id, trx), at,
      data: {
        ...logData(c, key ? { sha256: keySha256(key.pem), enrolledAt: key.enrolledAt } : null),
        bound_by: boundBy, supersedes_covenant_id: null, previous_template_id: null, signed: false,
      },
    });
    await store.setBoundLogIndex(trx, c.covenant_id, appended.index);
  }
}

export type Covenants = ReturnType<typeof createCovenants>;
